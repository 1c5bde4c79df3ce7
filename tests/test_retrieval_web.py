"""Web search providers and the BenchAge web pipeline, end to end over real HTTP on loopback.

No internet here: `chronokg.testing.search_server.SearchServer` stands in for Brave, Google
Programmable Search, the Wikipedia API and a SearxNG instance (their JSON), and serves the result
pages; `chronokg.testing.openai_server.OpenAIServer` (scripted) stands in for the model.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from chronokg.models import get_model
from chronokg.retrieval.providers import PROVIDERS, get_provider
from chronokg.retrieval.types import ProviderError
from chronokg.retrieval.web import prompts
from chronokg.retrieval.web.http import html_text
from chronokg.retrieval.web.pipeline import WebPipeline, logged_ids, question_id, read_log
from chronokg.retrieval.web.providers import BraveSearch, GoogleSearch, SearxngSearch, WikipediaSearch
from chronokg.settings import Settings
from chronokg.testing.openai_server import OpenAIServer
from chronokg.testing.provider_conformance import SearchProviderConformance
from chronokg.testing.search_server import Doc, SearchServer

DOCS = [
    Doc("un-sg", "Secretary-General of the United Nations",
        "The Secretary-General of the United Nations is the chief administrative officer of the United Nations. "
        "António Guterres has been Secretary-General since 1 January 2017.", wiki=True,
        published="2026-10-01T00:00:00Z"),
    Doc("guterres", "António Guterres",
        "António Guterres is a Portuguese politician and diplomat, Secretary-General of the United Nations since "
        "2017 and Prime Minister of Portugal from 1995 to 2002.", wiki=True),
    Doc("news-sg", "News: the United Nations Secretary-General term",
        "A news page: the current Secretary-General of the United Nations began a second term in 2022.",
        published="Mon, 03 Jan 2022 10:00:00 GMT"),
    Doc("blog-cpr", "Guideline recommendation on chest compressions",
        "Chest compressions: the guideline recommendation is a depth of 5 to 6 cm at 100 to 120 per minute."),
    Doc("forum", "Forum thread about United Nations", "People discuss the United Nations in a forum thread."),
]
QUESTION = "Who is the current Secretary-General of the United Nations?"


@pytest.fixture(scope="module")
def server() -> Iterator[SearchServer]:
    with SearchServer(DOCS) as s:
        yield s


def settings_for(server: SearchServer) -> Settings:
    return Settings(brave_api_key=SecretStr(server.brave_key), google_api_key=SecretStr(server.google_key),
                    google_cse_id=server.google_cx, searxng_url=f"{server.url}/searxng",
                    wikipedia_api_url=f"{server.url}/w/api.php")


async def no_wait(seconds: float) -> None:
    WAITS.append(seconds)


WAITS: list[float] = []


def make(name: str, server: SearchServer, **kw: Any) -> Any:
    endpoints = {"brave": {"endpoint": f"{server.url}/brave/res/v1/web/search"},
                 "google": {"endpoint": f"{server.url}/google/customsearch/v1"}}
    return get_provider(name, settings_for(server), sleep=no_wait, **endpoints.get(name, {}), **kw)


# --- the providers pass the shared contract ------------------------------------------------------------------


class _Web(SearchProviderConformance):
    query = "Secretary-General United Nations"
    engine = ""

    @pytest.fixture
    def provider(self, server: SearchServer) -> Any:
        return make(self.engine, server)


class TestBraveConformance(_Web):
    engine = "brave"


class TestGoogleConformance(_Web):
    engine = "google"


class TestWikipediaConformance(_Web):
    engine = "wikipedia"


class TestSearxngConformance(_Web):
    engine = "searxng"


def search(provider: Any, query: str, k: int = 5) -> Any:
    async def go() -> Any:
        try:
            return await provider.search(query, k=k)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def test_registry_lists_every_provider_without_importing_them() -> None:
    assert PROVIDERS.names() == ["brave", "google", "passages", "searxng", "wikipedia"]


def test_each_api_is_asked_as_its_documentation_says(server: SearchServer) -> None:
    server.params.clear()
    brave = search(make("brave", server), QUESTION, 4)
    ranked = server.rank(QUESTION)
    assert [r.url for r in brave] == [server.page_url(d) for d in ranked[:4]]
    assert brave[0].url == f"{server.url}/pages/news-sg" and brave[0].published == "Mon, 03 Jan 2022 10:00:00 GMT"
    assert all("searchmatch" not in r.text for r in brave) and "United Nations" in brave[0].text
    google = search(make("google", server), QUESTION, 3)
    assert len(google) == 3 and google[0].url == brave[0].url
    wiki = search(make("wikipedia", server), QUESTION, 5)
    assert {r.kind for r in wiki} == {"wikipedia"} and len(wiki) == 2
    searx = search(make("searxng", server), QUESTION, 5)
    assert searx[0].metadata == {"engine": "loopback"}
    sent = dict(server.params)
    assert sent["brave"] == {"q": QUESTION, "count": "4"}
    assert sent["google"] == {"key": server.google_key, "cx": server.google_cx, "q": QUESTION, "num": "3"}
    assert sent["wikipedia"]["list"] == "search" and sent["wikipedia"]["srlimit"] == "5"
    assert sent["searxng"] == {"q": QUESTION, "format": "json"}


def test_google_asks_for_at_most_ten(server: SearchServer) -> None:
    server.params.clear()
    assert len(search(make("google", server), "United Nations", 20)) <= 10
    assert server.params[-1][1]["num"] == "10"


def test_wikipedia_page_text(server: SearchServer) -> None:
    provider = make("wikipedia", server)

    async def go() -> str:
        try:
            return await provider.page_text("António Guterres")
        finally:
            await provider.aclose()
    assert asyncio.run(go()).startswith("António Guterres is a Portuguese politician")


def test_missing_and_wrong_keys_are_clear_errors(server: SearchServer) -> None:
    with pytest.raises(ProviderError, match="brave needs a key: set BRAVE_API_KEY"):
        BraveSearch(Settings(brave_api_key=None))
    with pytest.raises(ProviderError, match="google needs an engine id"):
        GoogleSearch(Settings(google_api_key=SecretStr("k"), google_cse_id=None))
    with pytest.raises(ProviderError, match="searxng needs an instance"):
        SearxngSearch(Settings(searxng_url=None))
    bad = BraveSearch(Settings(brave_api_key=SecretStr("wrong")), endpoint=f"{server.url}/brave/res/v1/web/search")
    with pytest.raises(ProviderError, match=r"refused the request.*401.*SUBSCRIPTION_TOKEN_INVALID"):
        search(bad, QUESTION)
    wrong = GoogleSearch(Settings(google_api_key=SecretStr("wrong"), google_cse_id=server.google_cx),
                         endpoint=f"{server.url}/google/customsearch/v1")
    with pytest.raises(ProviderError, match="API key not valid"):
        search(wrong, QUESTION)
    html_only = SearxngSearch(Settings(), base_url=f"{server.url}/pages")
    with pytest.raises(ProviderError, match="404"):
        search(html_only, QUESTION)


def test_retries_429_and_5xx_then_answers(server: SearchServer) -> None:
    WAITS.clear()
    before = server.requests["brave"]
    server.fail_next(429, retry_after=7)
    server.fail_next(503)
    provider = make("brave", server)
    assert search(provider, QUESTION, 2)
    assert server.requests["brave"] - before == 3
    assert WAITS == [7.0, 4.0]  # Retry-After, then the doubled wait (2 s, 4 s: the seed's 2 s sleeps)


def test_gives_up_after_three_attempts(server: SearchServer) -> None:
    WAITS.clear()
    server.fail_next(500, times=3)
    with pytest.raises(ProviderError, match=r"failed after 3 attempts.*HTTP 500"):
        search(make("searxng", server), QUESTION)
    assert len(WAITS) == 2


def test_page_text_drops_scripts_styles_and_optionally_tables() -> None:
    page = SearchServer(DOCS).page(DOCS[3])
    text = html_text(page, " ", drop_tables=True)
    assert "tracking" not in text and "color" not in text and "Infobox" not in text and "enable js" not in text
    assert text.startswith("Guideline recommendation on chest compressions Chest compressions:")
    assert "Infobox cell" in html_text(page, "\n")


# --- prompts -------------------------------------------------------------------------------------------------


def test_prompt_files_match_their_recorded_hashes() -> None:
    assert prompts.check() == []


def test_prompts_render_exactly_as_the_seed_sends_them() -> None:
    """The rendered messages of the seed's four chain-of-action prompts (notes: Python reprs of the seed's own
    strings for these inputs)."""
    assert prompts.plan_messages("Who is the current president of the United States?") == [
        {"role": "system", "content": "You are a reasoning assistant."},
        {"role": "user", "content": '\nYour job is to break down the following question into a sequence of smaller '
         'information retrieval questions.\n\nOriginal Question: "Who is the current president of the United '
         'States?"\n\nPlease list 2-4 sub-questions needed to answer this.\nOutput format:\n- Subgoal 1: ...\n- '
         'Subgoal 2: ...\n'}]
    assert prompts.extract_messages(["TEXT ONE", "TEXT TWO"]) == [{"role": "user", "content": (
        "Given the following documents, extract the most relevant facts and evidence that could help answer a factual "
        "question. Do NOT generate an answer. Just list facts.Document1:\nTEXT ONE\nDocument2:\nTEXT TWO\n")}]
    judged = prompts.sufficiency_messages("Who is X?", ["FACTS A"], ["SNIP A1\nSNIP A2"])[0]["content"]
    assert judged.startswith('\nYou are helping evaluate whether the current facts are enough to reasonably answer '
                             'a given question.\n\nQUESTION:\n"Who is X?"\n\nFACTS:\n[\'FACTS A\']\n\nSNIPPETS:\n'
                             "['SNIP A1\\nSNIP A2']\n\nINSTRUCTION:\n")
    assert judged.endswith("No  \nREASON: <why it's not sufficient>  \nREVISED QUESTION: <a better follow-up query "
                           "to help answer the original question>\n(Include both REASON and REVISED QUESTION)\n\n"
                           "IMPORTANT:\nStrictly follow one of the two response formats above. Do not include "
                           "anything else.\n")
    evidence = (prompts.evidence_block(1, "Who is X?", [("T1", "S1"), ("T2", "S2")], "FACTS 1")
                + prompts.evidence_block(2, "When did Y?", [("T3", "S3")], "FACTS 2"))
    assert prompts.answer_messages("MAIN Q?", evidence) == [
        {"role": "system", "content": "You are a helpful and intelligent assistant."},
        {"role": "user", "content": (
            "\n    Your task is to answer the user's question based on the following evidence gathered from web search."
            "\n\n    Main Question:\n    MAIN Q?\n\n    The following subgoals were used to break down the question, "
            "and for each subgoal, supporting evidence is provided.\n\n    \nSubgoal 1: Who is X?\nEvidence:\nT1 - S1"
            "\nT2 - S2Facts: FACTS 1\n\nSubgoal 2: When did Y?\nEvidence:\nT3 - S3Facts: FACTS 2\n\n\n    Please use "
            "the information from the evidence to answer the main question as accurately and clearly as possible.\n"
            "    - You may synthesize facts from multiple sources.\n    - If the evidence contains conflicting or "
            "incomplete information, explain what is uncertain.\n    - If the answer requires inference (e.g., "
            "numerical comparison, trend analysis), explain your reasoning.\n    - If the answer is straightforward "
            "and factual, answer directly.\n\n    Final Answer:\n    ")}]
    assert prompts.wiki_chunk_messages("Q?", "CHUNK {question}", 1, 2) == [{"role": "user", "content": (
        "Given the following Wikipedia page content chunk, answer the question below as accurately as possible using "
        "only the information in the chunk.\n\nWeb page content chunk 1/2:\nCHUNK {question}\n\nQuestion: Q?\nIf you "
        "cannot find the answer in the chunk, reply exactly with 'Not found'.\nAnswer:")}]


# --- the pipeline end to end ---------------------------------------------------------------------------------


class Scripted:
    """The model's side: answers by which seed prompt it was sent; the first sufficiency check of each sub-goal
    says No with a revised question, the second Yes."""

    def __init__(self, plan: str | None = None, wiki_answers: bool = True) -> None:
        self.judged: dict[str, int] = {}
        self.plan = plan or ("- Subgoal 1: Who holds the office of Secretary-General of the United Nations?\n"
                             "- Subgoal 2: Since when has the Secretary-General of the United Nations served?")
        self.wiki_answers = wiki_answers

    def __call__(self, request: Any) -> str:
        messages = request.body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = messages[-1]["content"]
        if system == "You are a reasoning assistant.":
            return self.plan
        if user.startswith("Given the following documents"):
            return f"FACTS({user.count('Document')} documents)"
        if user.startswith("\nYou are helping evaluate"):
            goal = user.split('QUESTION:\n"', 1)[1].split('"', 1)[0]
            self.judged[goal] = self.judged.get(goal, 0) + 1
            if self.judged[goal] == 1:
                return "No  \nREASON: vague  \nREVISED QUESTION: Guterres Secretary-General term 2022"
            return "Yes"
        if system == "You are a helpful and intelligent assistant.":
            return "António Guterres (since 2017)."
        if user.startswith("Given the following Wikipedia page content chunk"):
            return "António Guterres" if self.wiki_answers and "Guterres" in user else "Not found"
        return "unexpected prompt"


def pipeline(server: SearchServer, model_url: str, protocol: str = "seed", wiki: bool = False) -> WebPipeline:
    model = get_model("openai-compat/m", base_url=model_url, cache=False)
    return WebPipeline(model, chain_search=make("google", server),
                       wiki_search=make("wikipedia", server) if wiki else None, protocol=protocol)  # type: ignore[arg-type]


def answer(p: WebPipeline, question: str = QUESTION) -> Any:
    async def go() -> Any:
        try:
            return await p.answer(question, today=dt.date(2026, 11, 23))
        finally:
            await p.aclose()
    return asyncio.run(go())


def test_chain_of_action_decomposes_searches_judges_revises_and_answers(server: SearchServer) -> None:
    script = Scripted()
    with OpenAIServer(script=script) as model:
        result = answer(pipeline(server, model.url))
        bodies = list(model.bodies)
    assert result.status == "google" and result.search_answer == "António Guterres (since 2017)."
    kinds = [s.kind for s in result.steps]
    assert kinds[0] == "plan" and kinds[-1] == "answer"
    # per sub-goal: search, fetch..., extract, judge (No), search (revised), fetch..., extract, judge (Yes)
    assert kinds.count("judge") == 4 and kinds.count("extract") == 4 and kinds.count("search") == 4
    searches = [s.input["query"] for s in result.steps if s.kind == "search"]
    assert searches == ["Who holds the office of Secretary-General of the United Nations?",
                        "Guterres Secretary-General term 2022",
                        "Since when has the Secretary-General of the United Nations served?",
                        "Guterres Secretary-General term 2022"]
    assert all(s.input["k"] == 3 for s in result.steps if s.kind == "search")
    # every LLM step is logged with the exact messages the server received, at temperature 0
    llm = [s for s in result.steps if s.messages is not None]
    assert [s.messages for s in llm] == [b["messages"] for b in bodies]
    assert all(b["temperature"] == 0.0 and "max_tokens" not in b for b in bodies)
    assert llm[0].messages == prompts.plan_messages(QUESTION)
    # URLs are never fetched twice for one question; the revised search found only pages already seen
    fetched = [s.input for s in result.steps if s.kind == "fetch"]
    assert len(fetched) == len(set(fetched)) and {u for u, _ in result.urls} == set(fetched)
    final = llm[-1].messages[1]["content"]  # type: ignore[index]
    assert "\nSubgoal 1: Who holds the office" in final and "Facts: FACTS(" in final
    assert ("https://" not in final) and (server.url + "/wiki/") not in final  # titles and snippets, not links


def test_seed_replaces_a_subgoals_facts_after_a_revision_chronokg_keeps_them(server: SearchServer) -> None:
    finals = {}
    for protocol in ("seed", "chronokg"):
        with OpenAIServer(script=Scripted()) as model:
            result = answer(pipeline(server, model.url, protocol))
        final = next(s for s in result.steps if s.kind == "answer")
        assert final.messages is not None
        finals[protocol] = final.messages[1]["content"]
    first = finals["seed"].split("\nSubgoal 2")[0]
    assert first.count("FACTS(") == 1  # Q-W3: the revision's facts replaced the first extraction's
    assert finals["chronokg"].split("\nSubgoal 2")[0].count("FACTS(") == 2


def test_subgoal_lines_without_colon(server: SearchServer) -> None:
    plan = "- find who the Secretary-General of the United Nations is"
    with OpenAIServer(script=Scripted(plan=plan)) as model:
        seed = answer(pipeline(server, model.url, "seed"))
    assert seed.status == "unanswered" and seed.search_answer == ""
    assert "IndexError" in (seed.steps[-1].error or "")
    with OpenAIServer(script=Scripted(plan=plan)) as model:
        fixed = answer(pipeline(server, model.url, "chronokg"))
    assert fixed.status == "google"
    first_search = next(s for s in fixed.steps if s.kind == "search")
    assert first_search.input["query"] == "find who the Secretary-General of the United Nations is"


def test_wikipedia_path_answers_first_and_chunks_long_pages(server: SearchServer) -> None:
    with OpenAIServer(script=Scripted()) as model:
        p = pipeline(server, model.url, "chronokg", wiki=True)
        p.chunk_chars = 60
        result = answer(p)
        bodies = list(model.bodies)
    assert result.status == "wikipedia" and result.search_answer == "António Guterres"
    chunks = [s for s in result.steps if s.kind == "wiki_chunk"]
    assert chunks and all(b["max_tokens"] == 512 and b["temperature"] == 0.0 for b in bodies)
    assert "Web page content chunk 1/" in chunks[0].messages[0]["content"]  # type: ignore[index]
    assert result.urls == [(f"{server.url}/wiki/Secretary-General_of_the_United_Nations", None)]
    assert not any(s.kind == "plan" for s in result.steps)


def test_nothing_found_falls_through_and_seed_writes_not_found(server: SearchServer) -> None:
    no_wiki = Scripted(wiki_answers=False)
    with OpenAIServer(script=no_wiki) as model:
        p = pipeline(server, model.url, "seed", wiki=True)
        p.chain_search = None
        seed = answer(p)
    assert seed.status == "unanswered" and seed.search_answer == "Not found"  # Q-W7
    with OpenAIServer(script=Scripted(wiki_answers=False)) as model:
        p = pipeline(server, model.url, "chronokg", wiki=True)
        both = answer(p)
    assert both.status == "google"  # the chain of action answered after the Wikipedia path found nothing
    assert [s.kind for s in both.steps].index("path") < [s.kind for s in both.steps].index("plan")


def test_a_run_logs_each_question_and_resumes(server: SearchServer, tmp_path: Path) -> None:
    log = tmp_path / "web.jsonl"
    questions = [(None, QUESTION), ("q2", "What is the guideline recommendation on chest compressions?")]
    with OpenAIServer(script=Scripted()) as model:
        p = pipeline(server, model.url)
        first = asyncio.run(p.run(questions[:1], log, today=dt.date(2026, 11, 23)))
        asked = model.model_requests
        p2 = pipeline(server, model.url)
        second = asyncio.run(p2.run(questions, log, today=dt.date(2026, 11, 23)))
        assert model.model_requests > asked
        asked = model.model_requests
        p3 = pipeline(server, model.url)
        assert asyncio.run(p3.run(questions, log)) == []
        assert model.model_requests == asked  # everything was in the log: nothing asked again
    assert [a.id for a in first] == [question_id(QUESTION)] and [a.id for a in second] == ["q2"]
    assert logged_ids(log) == {question_id(QUESTION), "q2"}
    records = read_log(log)
    assert [r.seed_record()["status"] for r in records] == ["google", "google"]
    assert json.loads(log.read_text().splitlines()[0])["steps"][0]["kind"] == "plan"
    assert question_id(QUESTION) == question_id(QUESTION) and question_id(QUESTION).startswith("web-")


def test_the_pipeline_needs_a_search_provider() -> None:
    from chronokg.errors import ChronoKGError

    with pytest.raises(ChronoKGError, match="needs a search provider"):
        WebPipeline(get_model("openai-compat/m", base_url="http://127.0.0.1:9/v1", cache=False))


def test_wikipedia_search_finds_articles_only(server: SearchServer) -> None:
    hits = search(WikipediaSearch(settings_for(server)), "forum thread United Nations", 10)
    assert all(h.kind == "wikipedia" and "/wiki/" in (h.url or "") for h in hits)
