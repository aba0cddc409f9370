"""Function words: the words of a text that name nothing (articles, prepositions, pronouns,
small adverbs).

They are English words. So they serve only where a language's words may: the choice of a stored
plan to reuse (:mod:`toolplan.planning.reuse`); never a decision that a plan is invalid
(:mod:`toolplan.planning.grounding` uses none), nor a change to the model's plan
(:mod:`toolplan.planning.rewrites`)."""

from __future__ import annotations

__all__ = ["FUNCTION_WORDS"]

_FUNCTION_WORDS = """a an the this that these those of and or but nor not no in on at to for from with without
    by about before after between than then if when where while what which who whom whose how
    why is are was were be been it its me my you your we our they their his her also plus versus
    vs into onto over under per as both either neither all each every any some other another
    same more most less least only just very too so such there here now today tonight tomorrow
    yesterday please again instead first next last later soon"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Words a name (a city, a person, a metric) does not contain."""
