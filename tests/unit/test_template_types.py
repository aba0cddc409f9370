"""Templates checked against declared tool outputs before anything runs (issue 11, failures the
real 1.5B model made after the typed schema: wrong shapes and whole outputs of the wrong type)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.tools import load_tool_modules
from toolplan.tools.catalog import ToolCatalog, tagged
from toolplan.tools.returns import compact_shape, returns_schema, shown_shape
from toolplan.validation import analyze

CATALOG = load_tool_modules(["blog", "metrics", "weather"])


def step(sid: str, tool_name: str, **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool_name, "parameters": parameters}


def problems(*items: dict[str, Any], catalog: ToolCatalog = CATALOG) -> list[str]:
    try:
        analyze(parse_plan({"steps": list(items)}), catalog)
    except PlanInvalid as invalid:
        return [issue.message for issue in invalid.issues]
    return []


def find(query: str) -> dict[str, Any]:
    """Find something."""
    return {}


def use(value: str) -> str:
    """Use a value."""
    return ""


def reference_problem(returns: dict[str, Any], template: str, *, source: str) -> str:
    """The one problem of a plan whose step ``source`` returns ``returns`` and whose next step
    is given ``template``."""
    catalog = ToolCatalog([tagged(tool(find), returns=returns), tool(use)])
    (found,) = problems(
        step(source, "find", query="x"), step("u", "use", value=template), catalog=catalog
    )
    return found


# -- what the real model wrote -------------------------------------------------------------------


def test_an_index_into_an_object_names_the_list_inside_it() -> None:
    found = problems(
        step("metrics", "list_metrics"),
        step("query", "query_metric", name="{{metrics[0].name}}"),
        step("draft", "createDraft", title="M", content="The first is {{metrics[0].name}}"),
    )
    assert found == [
        "step 'query': template '{{metrics[0].name}}': step 'metrics' (list_metrics) returns an "
        "object with keys metrics, not a list, so [0] does not exist; the list is under "
        "'metrics': {{metrics.metrics[0].name}}",
        "step 'draft': template '{{metrics[0].name}}': step 'metrics' (list_metrics) returns an "
        "object with keys metrics, not a list, so [0] does not exist; the list is under "
        "'metrics': {{metrics.metrics[0].name}}",
    ]


def test_a_whole_object_where_a_number_goes_suggests_the_numeric_field() -> None:
    (found,) = problems(
        step("cpu", "query_metric", name="cpu_usage"),
        step("check", "check_threshold", metric_name="cpu_usage", threshold=80, value="{{cpu}}"),
    )
    assert found == (
        "step 'check' of tool 'check_threshold': argument 'value' takes a number, but '{{cpu}}' "
        "is an object with keys name, current, unit, series; use a field of it: {{cpu.current}}"
    )


def test_a_whole_object_where_text_goes_offers_fields_and_the_sentence_form() -> None:
    (found,) = problems(
        step("cpu_usage", "query_metric", name="cpu_usage"),
        step("draft", "createDraft", title="CPU report", content="{{cpu_usage}}"),
    )
    assert "argument 'content' takes a string, but '{{cpu_usage}}' is an object" in found
    assert "use a field of it: {{cpu_usage.name}} or {{cpu_usage.unit}}" in found
    assert (
        'write it inside a sentence, where any value becomes text: "... {{cpu_usage.current}} ..."'
        in found
    )


def test_a_field_where_the_whole_report_goes_suggests_the_report() -> None:
    (found,) = problems(
        step("paris", "get_weather", location="Paris"),
        step("berlin", "get_weather", location="Berlin"),
        step("summary", "summarize", data=["{{paris.temp}}", "{{berlin}}"]),
    )
    assert found == (
        "step 'summary' of tool 'summarize': argument 'data[0]' takes an object, but "
        "'{{paris.temp}}' is a number; did you mean '{{paris}}'?"
    )


def test_an_object_where_a_list_goes_names_the_list_field() -> None:
    (found,) = problems(
        step("m", "list_metrics"),
        step("s", "summarize", data="{{m}}"),
    )
    assert found.endswith(
        "takes a list, but '{{m}}' is an object with keys metrics; use a field of it: {{m.metrics}}"
    )


def test_a_misspelt_key_gets_the_close_one_and_a_key_on_a_list_gets_an_element() -> None:
    found = problems(
        step("author", "createAuthor", name="Bo", email="bo@t.com"),
        step("blog", "createBlog", authorId="{{author.id}}", title="t", content="c"),
        step("all", "listBlogs"),
        step("c", "createComment", blogId="{{all.blogs._id}}", text="hi"),
    )
    assert found == [
        "step 'blog': template '{{author.id}}': step 'author' (createAuthor) returns an object "
        "with keys _id, name, email, without 'id'; did you mean {{author._id}}?",
        "step 'c': template '{{all.blogs._id}}': 'all.blogs' returns a list, so it has no key "
        "'_id'; pick an element, e.g. {{all.blogs[0]._id}}",
    ]


def test_a_missing_key_is_offered_only_a_key_spelled_like_it() -> None:
    """NESTFUL sgd-14: a booking returns no hotel name, and the hint offered the nearest string,
    ``phone_number``, which would put a phone number where a name goes."""

    keys = ("where_to", "address", "phone_number", "total_price")
    returns = {"type": "object", "properties": {key: {"type": "string"} for key in keys}}

    def problem(written: str) -> str:
        return reference_problem(returns, written, source="booking")

    assert problem("{{booking.hotel_name}}").endswith(
        "with keys where_to, address, phone_number, total_price, without 'hotel_name'"
    )
    assert problem("{{booking.number}}").endswith("without 'number'")
    assert problem("{{booking.adress}}").endswith("did you mean {{booking.address}}?")
    assert problem("{{booking.totalPrice}}").endswith("did you mean {{booking.total_price}}?")


def test_an_index_into_one_value_names_the_value() -> None:
    """NESTFUL executable-45: ``{{search.restaurantsId[0].restaurantsId}}`` where the search
    returns one id (a string); the repair got no hint and the model kept the index."""

    returns = {
        "type": "object",
        "properties": {"restaurantsId": {"type": "string"}, "name": {"type": "string"}},
    }

    def problem(written: str) -> str:
        return reference_problem(returns, written, source="search")

    fix = "returns a string, not a list, so [0] does not exist; it is one value: "
    assert problem("{{search.restaurantsId[0].restaurantsId}}").endswith(
        fix + "{{search.restaurantsId}}"
    )
    assert problem("{{search.restaurantsId[0]}}").endswith(fix + "{{search.restaurantsId}}")
    # another key after the index, or another index: what was meant is not known
    assert problem("{{search.restaurantsId[0].name}}").endswith("so [0] does not exist")
    assert problem("{{search.restaurantsId[1]}}").endswith("so [1] does not exist")


def _obj(*keys: str) -> dict[str, Any]:
    return {"type": "object", "properties": {key: {"type": "string"} for key in keys}}


def _movie_catalog(*extra: Any, **tags: tuple[str, ...]) -> ToolCatalog:
    """NESTFUL sgd-15's catalog, cut down: a search for movies, a tool for their show times, and
    a booking that takes a show time (and echoes it back). ``tags``: a tool's tags by name."""

    def find_movies(location: str) -> dict[str, Any]:
        """Find movies playing in a city."""
        return {}

    def get_times(movie_name: str, location: str, show_date: str) -> dict[str, Any]:
        """Show times of a movie."""
        return {}

    def buy_tickets(movie_name: str, show_time: str, number_of_tickets: int) -> dict[str, Any]:
        """Buy tickets for a show."""
        return {}

    made = {
        "find_movies": _obj("movie_name", "theater_name"),
        "get_times": _obj("movie_name", "show_time", "show_date"),
        "buy_tickets": _obj("movie_name", "show_time", "price"),
    }
    tools = [
        tagged(tool(fn), *tags.get(fn.__name__, ()), returns=made[fn.__name__])
        for fn in (find_movies, get_times, buy_tickets)
    ]
    return ToolCatalog([*tools, *extra])


READS = {"find_movies": ("read-only",), "get_times": ("read-only",)}
"""The catalog's reads, tagged: a catalog that says which tools only read."""


def _ticket_plan(*before: dict[str, Any], show_time: str = "{{movies.show_time}}") -> list[Any]:
    return [
        step("movies", "find_movies", location="Chicago"),
        *before,
        step(
            "tickets",
            "buy_tickets",
            movie_name="{{movies.movie_name}}",
            show_time=show_time,
            number_of_tickets=3,
        ),
    ]


def _times(**more: Any) -> dict[str, Any]:
    return {
        **step(
            "times", "get_times", movie_name="{{movies.movie_name}}", location="C", show_date="d"
        ),
        **more,
    }


def test_a_missing_key_names_the_one_tool_that_makes_it() -> None:
    """NESTFUL sgd-15 (seed 3): the model asked the movie search for a ``show_time`` only the
    show-times tool returns; told only that the key was missing, it wrote the same template in
    all four answers and ended with no plan."""
    (found,) = problems(*_ticket_plan(), catalog=_movie_catalog(**READS))
    assert found.endswith(
        "without 'show_time'; tool 'get_times' returns 'show_time': call that tool first and "
        "take its 'show_time'"
    )
    # a catalog that does not say which tools only read: calling it may change something
    (found,) = problems(*_ticket_plan(), catalog=_movie_catalog())
    assert found.endswith(
        "without 'show_time'; only tool 'get_times' returns 'show_time': if the request asks "
        "for what that tool does, call it first and take its 'show_time'"
    )


def test_a_missing_key_names_the_step_of_the_plan_that_returns_it() -> None:
    """NESTFUL sgd-14 (seed 2): the plan searched hotels, then asked a house booking for the
    ``hotel_name`` the search returned. The step is named whatever its tool does: it is called
    anyway; the rest of the path is kept."""
    (found,) = problems(*_ticket_plan(_times()), catalog=_movie_catalog())
    assert found.endswith("; step 'times' (get_times) returns it: {{times.show_time}}")
    nested = _ticket_plan(_times(), show_time="{{movies.show_time.start}}")
    (found,) = problems(*nested, catalog=_movie_catalog(buy_tickets=("approval",)))
    assert found.endswith("; step 'times' (get_times) returns it: {{times.show_time.start}}")
    # the built-in blog tools: a write already in the plan returns the name
    found = problems(
        step("author", "createAuthor", name="Bo", email="bo@t.com"),
        step("blog", "createBlog", authorId="{{author._id}}", title="t", content="c"),
        step("note", "createDraft", title="{{blog.name}}", content="c"),
    )
    assert found == [
        "step 'note': template '{{blog.name}}': step 'blog' (createBlog) returns an object with "
        "keys _id, authorId, title, content, without 'name'; step 'author' (createAuthor) "
        "returns it: {{author.name}}"
    ]


def test_no_maker_is_named_when_it_is_not_the_only_one_or_could_not_come_first() -> None:
    def other_times(movie_name: str) -> dict[str, Any]:
        """Show times elsewhere."""
        return {}

    def hold_seat(show_time: str) -> dict[str, Any]:
        """Hold a seat at a show."""
        return {}

    def named(*plan: Any, catalog: ToolCatalog) -> bool:
        return any(
            "returns it" in p or "returns 'show_time'" in p
            for p in problems(*plan, catalog=catalog)
        )

    shown = _obj("show_time")
    # a tool that takes the key and returns it back does not make it
    echoing = _movie_catalog(tagged(tool(hold_seat), returns=shown))
    assert named(*_ticket_plan(), catalog=echoing)
    assert not named(
        *_ticket_plan(), catalog=_movie_catalog(tagged(tool(other_times), returns=shown))
    )
    # a maker that waits for approval, or writes where the catalog says which tools only read
    assert not named(*_ticket_plan(), catalog=_movie_catalog(get_times=("approval",)))
    assert not named(*_ticket_plan(), catalog=_movie_catalog(find_movies=("read-only",)))
    # the plan's call of the maker runs after the step: by a template, its fallback's, or its
    # forEach; or it is mapped, conditional, or may answer with another tool's output
    later = step(
        "late", "get_times", movie_name="{{tickets.movie_name}}", location="C", show_date="d"
    )
    fallback = _times(
        fallback={
            "tool": "get_times",
            "parameters": {
                "movie_name": "{{tickets.movie_name}}",
                "location": "C",
                "show_date": "d",
            },
        }
    )
    mapped_on = {
        **step("mid", "find_movies", location="{{$item}}"),
        "forEach": "{{tickets.movie_name}}",
    }
    via_map = _times(dependsOn=["mid"])
    other_tool = _times(fallback={"tool": "find_movies", "parameters": {"location": "C"}})
    for plan in (
        [*_ticket_plan(), later],
        _ticket_plan(fallback),
        [*_ticket_plan(via_map), mapped_on],
        _ticket_plan(_times(forEach=["A", "B"])),
        _ticket_plan(_times(when="{{movies.movie_name}} != ''")),
        _ticket_plan(other_tool),
        _ticket_plan(_times(), {**_times(), "id": "times_2"}),
    ):
        assert not named(*plan, catalog=_movie_catalog(**READS)), plan


def test_a_key_many_tools_return_or_a_getter_by_id_names_no_tool() -> None:
    """Counted over the whole catalog: ``get_post`` takes a post id and returns ``id`` and
    ``created_at``, as ``get_user`` does; leaving the asking tool out would name ``get_user``
    and feed a user's id as a post's. A getter by id (``getAuthor``) cannot be called first."""

    def search_posts(query: str) -> dict[str, Any]:
        """Search posts."""
        return {}

    def get_post(post_id: str) -> dict[str, Any]:
        """Get a post."""
        return {}

    def get_user(user_id: str) -> dict[str, Any]:
        """Get a user."""
        return {}

    catalog = ToolCatalog(
        [
            tagged(tool(search_posts), "read-only", returns=_obj("title", "score")),
            tagged(tool(get_post), "read-only", returns=_obj("id", "title", "created_at")),
            tagged(tool(get_user), "read-only", returns=_obj("id", "name", "created_at")),
        ]
    )
    (found,) = problems(
        step("s", "search_posts", query="q"),
        step("p", "get_post", post_id="{{s.id}}"),
        catalog=catalog,
    )
    assert found.endswith("without 'id'")
    (found,) = problems(
        step("weather", "get_weather", location="Oslo"),
        step("d", "createDraft", title="{{weather.name}}", content="c"),
    )
    assert found.endswith("without 'name'")


def test_a_maker_is_not_named_where_the_message_already_names_a_fix() -> None:
    """A key spelled like an existing one is a misspelling, not a call to add."""

    def find_again(location: str) -> dict[str, Any]:
        """Find movies again."""
        return {}

    catalog = _movie_catalog(tagged(tool(find_again), returns=_obj("theater")))
    (found,) = problems(*_ticket_plan(show_time="{{movies.theater}}"), catalog=catalog)
    assert found.endswith("without 'theater'; did you mean {{movies.theater_name}}?")


# -- what must stay valid ------------------------------------------------------------------------


def test_paths_that_exist_and_text_interpolation_pass() -> None:
    assert not problems(
        step("m", "list_metrics", category="storage"),
        step("q", "query_metric", name="{{m.metrics[0].name}}"),
        step("l", "listBlogs"),
        step("author", "createAuthor", name="Bo", email="bo@t.com"),
        step("blog", "createBlog", authorId="{{author._id}}", title="{{q.unit}}", content="{{q}}!"),
        step("c", "createComment", blogId="{{l.blogs.0._id}}", text="{{q.current}} / {{l.count}}"),
        step("check", "check_threshold", metric_name="disk_io", threshold="{{l.count}}"),
        step("w", "get_weather", location="Oslo"),
        step("cmp", "compare_data", data_a="{{w}}", data_b="{{w}}"),
        step("s", "summarize", data=["{{w}}", "{{w}}"]),
    )


@tool
def opaque(key: str) -> dict[str, Any]:
    """Returns whatever the backend sends."""
    return {"key": key}


@tool
def text(key: str) -> str:
    """Returns text, which the engine parses when it holds JSON."""
    return "{}"


@tool
def number(key: str) -> float:
    """Returns a number."""
    return 1.0


def test_open_objects_strings_and_undeclared_outputs_are_not_checked() -> None:
    catalog = ToolCatalog([opaque, text, number, *load_tool_modules(["metrics"])])
    assert returns_schema(opaque) == {"type": "object", "additionalProperties": True}
    assert returns_schema(text) is None
    assert not problems(
        step("o", "opaque", key="a"),
        step("t", "text", key="b"),
        step("n", "number", key="c"),
        step("q", "query_metric", name="{{o.anything[3].deep}}"),
        step("r", "query_metric", name="{{t.items[0]}}"),
        step("check", "check_threshold", metric_name="cpu_usage", threshold="{{n}}"),
        catalog=catalog,
    )
    (wrong,) = problems(
        step("n", "number", key="c"),
        step("q", "query_metric", name="{{n.value}}"),
        catalog=catalog,
    )
    assert wrong == (
        "step 'q': template '{{n.value}}': step 'n' (number) returns a number, so it has no key 'value'"
    )


def test_a_step_with_a_fallback_of_another_tool_is_not_checked() -> None:
    fallback = {"tool": "list_metrics", "parameters": {}}
    assert not problems(
        {**step("w", "get_weather", location="Oslo"), "fallback": fallback},
        step("q", "query_metric", name="{{w.metrics[0].name}}"),
    )


# -- where the output shape comes from ---------------------------------------------------------


class Row(TypedDict):
    id: str


class Page(BaseModel):
    rows: list[Row]
    next_cursor: str | None = Field(default=None, alias="nextCursor")


@tool
def page_tool(cursor: str) -> Page:
    """One page of rows."""
    return Page(rows=[])


@tool
def declared(cursor: str) -> Any:
    """Declared by tagged(returns=...)."""
    return {}


def test_shapes_come_from_annotations_declarations_and_json_schemas() -> None:
    # a pydantic model: by field name, as the engine stores it (model_dump(mode="json"))
    assert (
        compact_shape(returns_schema(page_tool) or {})
        == "{rows: [{id: string}], next_cursor: string | null}"
    )
    tagged(declared, returns=Row)
    assert returns_schema(declared) == {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
    }
    tagged(
        declared,
        returns={
            "type": "array",
            "items": {"$ref": "#/$defs/R"},
            "$defs": {"R": {"type": "integer"}},
        },
    )
    assert compact_shape(returns_schema(declared) or {}) == "[integer]"
    assert shown_shape({"type": "object", "additionalProperties": True}) is None


@pytest.mark.parametrize("name", ["list_metrics", "query_metric", "listBlogs", "get_weather"])
def test_builtin_tools_declare_their_output_and_the_catalog_shows_it(name: str) -> None:
    info = CATALOG.info(name)
    assert info.returns is not None and info.to_json()["returns"] == info.returns
    assert shown_shape(info.returns)


def test_a_number_or_boolean_where_only_text_goes_is_not_a_problem() -> None:
    # The engine resolves it as its text (toolplan.plan_format.templates.resolve with the argument schema).
    assert (
        problems(
            step("cpu_usage", "query_metric", name="cpu_usage"),
            step("draft", "createDraft", title="CPU report", content="{{cpu_usage.current}}"),
        )
        == []
    )


def test_a_declared_key_with_a_space_is_checked_and_suggested_quoted() -> None:
    def exchange_rate(base: str, target: str) -> dict[str, Any]:
        """The rate between two currencies."""
        return {"Exchange Rate": 1.08}

    def multiply(numbers: str) -> float:
        """Evaluate a product."""
        return 0.0

    catalog = ToolCatalog(
        [
            tagged(
                tool(exchange_rate),
                returns={
                    "type": "object",
                    "properties": {"Exchange Rate": {"type": "number"}},
                },
            ),
            tool(multiply),
        ]
    )
    rate = step("rate", "exchange_rate", base="USD", target="EUR")
    assert (
        problems(
            rate, step("m", "multiply", numbers='5 * {{rate["Exchange Rate"]}}'), catalog=catalog
        )
        == []
    )
    (found,) = problems(
        rate, step("m", "multiply", numbers="5 * {{rate.Exchange}}"), catalog=catalog
    )
    assert '{{rate["Exchange Rate"]}}' in found


def test_a_value_the_object_lacks_is_not_sent_to_its_one_list() -> None:
    """NESTFUL's TripadvisorSearchHotels returns one hotel with one list, ``cardPhotos``: asked
    for ``{{hotel_search.totalRatings}}``, the problem pointed at the photos ("the list is
    under 'cardPhotos'"). The list is named only where a list is asked for by a name of its own,
    or where its items hold the key."""
    photos = {"type": "array", "items": {"type": "string"}}
    hotel = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "cardPhotos": photos},
    }
    lacking = reference_problem(hotel, "{{hotel_search.totalRatings}}", source="hotel_search")
    assert lacking.endswith("returns an object with keys title, cardPhotos, without 'totalRatings'")
    # indexed, the missing key is a list's name
    indexed = reference_problem(hotel, "{{hotel_search.items[0]}}", source="hotel_search")
    assert indexed.endswith("the list is under 'cardPhotos': {{hotel_search.cardPhotos[0]}}")
    # a key the list's items hold is reached through the list
    rating = {"type": "object", "properties": {"totalRatings": {"type": "integer"}}}
    listing = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "data": {"type": "array", "items": rating}},
    }
    through = reference_problem(listing, "{{hotel_search.totalRatings}}", source="hotel_search")
    assert through.endswith("the list is under 'data': {{hotel_search.data[0].totalRatings}}")


def test_a_list_asked_for_by_a_name_of_its_own_is_pointed_at() -> None:
    """Where a list goes (an argument that takes one), ``{{s.items}}`` names the object's one
    list; a ``forEach`` likewise (tests/unit/test_control_flow.py)."""

    def tag_all(names: list[str]) -> None:
        """Tag every name."""

    photos = {"type": "array", "items": {"type": "string"}}
    hotel = {"type": "object", "properties": {"title": {"type": "string"}, "photos": photos}}
    catalog = ToolCatalog([tagged(tool(find), returns=hotel), tool(tag_all)])
    (found,) = problems(
        step("hotel", "find", query="x"),
        step("t", "tag_all", names="{{hotel.items}}"),
        catalog=catalog,
    )
    assert found.endswith("without 'items'; the list is under 'photos': {{hotel.photos}}")


def test_an_element_of_a_list_an_object_is_not_names_its_own_key() -> None:
    """NESTFUL's LocalBusinessData returns one flat object; the model wrote
    ``{{places.items[0].business_id}}`` after the prompt's ``{{stepId.items[0].name}}``."""

    def problem_when_it_returns(returns: dict[str, Any]) -> str:
        return reference_problem(returns, "{{places.items[0].business_id}}", source="places")

    flat = {"type": "object", "properties": {"business_id": {"type": "string"}}}
    assert problem_when_it_returns(flat).endswith(
        "without 'items'; it is one object, not a list: did you mean {{places.business_id}}?"
    )
    # an object with a list of other things is still one object
    photos = {"type": "array", "items": {"type": "string"}}
    with_photos = {"type": "object", "properties": {**flat["properties"], "photos": photos}}
    assert problem_when_it_returns(with_photos).endswith("did you mean {{places.business_id}}?")
    # an object whose list holds items with that key is named by that list
    holding = {
        "type": "object",
        "properties": {
            "business_id": {"type": "string"},
            "data": {"type": "array", "items": flat},
        },
    }
    assert problem_when_it_returns(holding).endswith(
        "the list is under 'data': {{places.data[0].business_id}}"
    )
