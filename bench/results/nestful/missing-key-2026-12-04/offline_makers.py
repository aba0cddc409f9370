"""What the missing-key hint would name for each reference of NESTFUL's tuning gold.

For every ``$varN.key$`` a gold call passes (splits ``sgd`` and ``executable``, seeds 0-4 of
distractors), the catalog part of the hint (toolplan.validation.makers) is asked which tool makes
``key``: the gold's producing tool, another tool, or none. Run from the repository's root:
``PYTHONPATH=packages:. python bench/results/nestful/missing-key-2026-12-04/offline_makers.py``.
"""

import re
from collections import Counter

from bench.nestful.data import load_split
from bench.nestful.tools import Toolbox

from toolplan.plan_format.names import is_id_argument
from toolplan.plan_format.plan import Plan
from toolplan.validation.makers import Makers

REF = re.compile(r"^\$(var\d+)\.([^$]+)\$$")
tally: Counter[str] = Counter()
for split in ("sgd", "executable"):
    for seed in range(5):
        for s in load_split(split, seed=seed):
            box = Toolbox.of(s.tools)
            makers = Makers(Plan(steps=[]), box.catalog())._makers()  # the catalog's index only
            labels = {c.get("label"): box.api_name(c["name"]) for c in s.gold if c.get("label")}
            for call in s.gold:
                if call.get("name") == "var_result":
                    continue
                asking = box.api_name(call["name"])
                for value in (call.get("arguments") or {}).values():
                    m = REF.match(value) if isinstance(value, str) else None
                    if not m or m.group(1) not in labels:
                        continue
                    key, producer = m.group(2), labels[m.group(1)]
                    found = makers.get(key, [])
                    if len(found) != 1:
                        tally["none: %s makers" % ("0" if not found else "2+")] += 1
                        continue
                    maker = found[0]
                    required = maker.parameters.get("required") or []
                    if (
                        maker.name == asking
                        or maker.gated
                        or any(is_id_argument(str(r)) for r in required)
                    ):
                        tally["none: the asking tool, or one needing an id"] += 1
                    elif maker.name == producer:
                        tally["names the gold's producing tool"] += 1
                    else:
                        tally["names another tool"] += 1
                        print(
                            f"another: {s.id} seed {seed}: {key!r} gold {producer}, hint {maker.name}"
                        )
for what, count in tally.most_common():
    print(f"{what}: {count}")
print(f"references: {sum(tally.values())}")
