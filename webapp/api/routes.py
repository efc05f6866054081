"""The routes of `/api/v1`: debates, commands, exports, rematches, results and tournaments.

Requests and answers are the project's own models: a new debate is a `DebateConfig` (as the form
builds and `--config` files hold), a debate is the document `show --json` prints (`export.to_dict`), a
listing row is the store's `DebateRow`, a tournament is a `Tournament`, a board is `Leaderboard.public()`.
Every route takes a `Caller` (`webapp.api.auth`) and goes through its `Gate`.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from webapp import export
from webapp.access.roles import Action, PermissionDenied
from webapp.api import events
from webapp.api.auth import Caller, caller
from webapp.engine import audience
from webapp.engine.api import Command, StopArgs
from webapp.engine.engine import DebateNotFound
from webapp.engine.formats import FORMATS
from webapp.engine.judge_health import judge_health
from webapp.engine.machine import TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError
from webapp.engine.series import NotEnded
from webapp.engine.state import DebateState
from webapp.models import DebateConfig
from webapp.results.leaderboard import LeaderboardFilters, leaderboard
from webapp.store import DebateRow
from webapp.store.comments import CommentStore
from webapp.tournament.plan import Tournament
from webapp.tournament.progress import progress, standings
from webapp.tournament.store import TournamentRow, TournamentStore
from webapp.ui import runtime
from webapp.ui.components.badges import STATUS_FILTERS

router = APIRouter()
CallerDep = Annotated[Caller, Depends(caller)]
MAX_PAGE = 200
Order = Literal["newest", "oldest", "cost", "status"]
StatusFilter = Literal["running", "paused", "awaiting_acknowledgement", "awaiting_clarification", "error",
                       "completed", "stopped", "idle"]
ApiCommand = Literal["pause", "resume", "stop", "retry"]


class Created(BaseModel):
    """A debate or tournament was made: its id and the address of its page."""

    id: str
    url: str


class DebatePage(BaseModel):
    """A page of the dashboard's listing."""

    items: list[DebateRow]
    total: int
    offset: int
    limit: int


class CommandDone(BaseModel):
    """What a command did, in the sentence the page shows, and the debate's status after it."""

    command: str
    status: str
    message: str


class TournamentView(BaseModel):
    """A tournament as stored, with where it stands (as its page shows it)."""

    tournament: TournamentRow
    done: int
    total: int
    spent_usd: float
    eta_seconds: float | None
    debates: dict[str, DebateRow] = Field(description="slot key -> the debate played for it")
    standings: list[dict[str, Any]]


def config_problem(exc: ConfigError) -> HTTPException:
    """A configuration the engine refused, as FastAPI words a body that fails validation: 422, naming the
    field (`budget.cost_limit`) in `loc`, the way the CLI and the form name it."""
    return HTTPException(422, [{"loc": ["body", *exc.field.split(".")], "msg": exc.message,
                                "type": "config_error", "field": exc.field}])


def page_url(request: Request, path: str) -> str:
    return str(request.base_url).rstrip("/") + path


async def session_of(api: Caller, debate_id: str) -> DebateSession:
    try:
        session = await api.engine.session(debate_id)
    except DebateNotFound:
        raise HTTPException(404, f"no debate {debate_id!r}") from None
    # Run by another process (a worker, the CLI) and not watched here: read what it wrote since.
    await session.catch_up()
    return session


def let_go(session: DebateSession) -> None:
    """Done reading a debate: a finished one that nobody watches may leave the engine's memory (a script
    reading thousands of debates must not keep them all loaded). Subscribing and leaving at once runs
    the session's usual release."""
    session.subscribe(lambda _message: None)()


async def readable(api: Caller, debate_id: str, action: Action = Action.WATCH) -> DebateSession:
    """The session of a debate the caller may read (403 for a caller who may read no debate at all, before
    the id is looked up; 404 for an unknown id)."""
    await api.require(action)
    session = await session_of(api, debate_id)
    await api.require(action, session.id)
    return session


# --- debates ----------------------------------------------------------------------------------------


@router.post("/debates", status_code=201, response_model=Created, tags=["debates"],
             summary="Create and start a debate")
async def create_debate(config: DebateConfig, request: Request, api: CallerDep) -> Created:
    try:
        session = await api.gate.start(config)
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    except ConfigError as exc:
        raise config_problem(exc) from None
    (await runtime.current().hub()).debates_changed(session.id)
    return Created(id=session.id, url=page_url(request, f"/debate/{session.id}"))


@router.get("/debates", response_model=DebatePage, tags=["debates"], summary="List debates (the dashboard)")
async def list_debates(
    api: CallerDep,
    q: Annotated[str, Query(max_length=200, description="the topic or a tag contains it")] = "",
    status: Annotated[list[StatusFilter] | None, Query(description="the dashboard's status filters")] = None,
    model: Annotated[str | None, Query(description="a participant uses it (provider:model)")] = None,
    tag: Annotated[str | None, Query(description="the debate carries this topic tag")] = None,
    order: Order = "newest",
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
) -> DebatePage:
    await api.require(Action.LIST)
    states = [s for key in status or [] for s in STATUS_FILTERS[key]]
    rows, total = await api.engine.list_debates(q, states or None, offset, limit, order, model=model, tag=tag)
    return DebatePage(items=rows, total=total, offset=offset, limit=limit)


async def beside_the_log(api: Caller, state: DebateState) -> tuple[export.Talk, dict[str, Any]]:
    """What people said, kept beside the log: comments and reactions per turn, the audience vote and the
    people's verdicts (as `show --json` has them)."""
    talk = await CommentStore(api.engine.store).for_debate(state.id)
    return talk, await audience.read_people(api.engine.store, state)


@router.get("/debates/{debate_id}", tags=["debates"], summary="A debate (the `show --json` document)")
async def get_debate(debate_id: str, api: CallerDep) -> dict[str, Any]:
    session = await readable(api, debate_id)
    document = export.to_dict(session.state, *await beside_the_log(api, session.state))
    let_go(session)
    return document


@router.delete("/debates/{debate_id}", status_code=204, tags=["debates"], summary="Delete a debate (admins)")
async def delete_debate(debate_id: str, api: CallerDep) -> Response:
    await api.require(Action.DELETE)
    session = await session_of(api, debate_id)
    try:
        await api.gate.delete(session.id)
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    (await runtime.current().hub()).debates_changed(session.id)
    return Response(status_code=204)


@router.post("/debates/{debate_id}/commands/{command}", response_model=CommandDone, tags=["debates"],
             summary="Pause, resume, stop or retry a debate")
async def send_command(debate_id: str, command: ApiCommand, api: CallerDep,
                       args: Annotated[StopArgs | None, Body(description="only for stop")] = None) -> CommandDone:
    session = await session_of(api, debate_id)
    kwargs: dict[str, Any] = {}
    if args is not None:
        if command != "stop":
            raise HTTPException(422, [{"loc": ["body"], "msg": f"{command} takes no arguments",
                                       "type": "extra_forbidden"}])
        kwargs = args.model_dump()
    try:
        result = await api.gate.command(session, Command(command), **kwargs)
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    except TransitionNotAllowed as exc:
        raise HTTPException(409, str(exc)) from None
    return CommandDone(command=command, status=session.view().status.value, message=result.message)


@router.get("/debates/{debate_id}/export.{extension}", tags=["debates"], summary="Export (.md, .json, .txt)",
            response_class=PlainTextResponse)
async def export_debate(debate_id: str, extension: Literal["md", "json", "txt"], api: CallerDep) -> Response:
    session = await readable(api, debate_id, Action.EXPORT)
    writer = export.writer_for(extension)
    assert writer is not None
    media = {"md": "text/markdown", "json": "application/json", "txt": "text/plain"}[extension]
    text = writer(session.state, *await beside_the_log(api, session.state))
    let_go(session)
    return Response(text, media_type=f"{media}; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="debate-{session.id}.{extension}"'})


@router.post("/debates/{debate_id}/rematch", status_code=201, response_model=Created, tags=["debates"],
             summary="Start the rematch with sides swapped")
async def rematch(debate_id: str, request: Request, api: CallerDep) -> Created:
    await api.require(Action.CREATE)
    original = await session_of(api, debate_id)
    try:
        session = await api.gate.rematch(original.id)
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    except NotEnded as exc:
        raise HTTPException(409, str(exc)) from None
    except ConfigError as exc:
        raise config_problem(exc) from None
    (await runtime.current().hub()).debates_changed(session.id)
    return Created(id=session.id, url=page_url(request, f"/debate/{session.id}"))


# --- results ----------------------------------------------------------------------------------------


def board_filters(format: str | None, tag: str | None, judge: str | None, since: date | None, until: date | None,
                  series: bool) -> LeaderboardFilters:
    if format is not None and format not in FORMATS:
        raise HTTPException(422, [{"loc": ["query", "format"], "type": "value_error",
                                   "msg": f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}"}])
    if since and until and until < since:
        raise HTTPException(422, [{"loc": ["query", "until"], "type": "value_error",
                                   "msg": "until comes before since"}])
    return LeaderboardFilters(format=format, tag=tag, judge=judge, since=since, until=until, series_only=series)


async def board_query(format: str | None = None, tag: str | None = None,
                      judge: Annotated[str | None, Query(description="a judge model (provider:model)")] = None,
                      since: date | None = None, until: date | None = None,
                      series: Annotated[bool, Query(description="only side-swapped series")] = False,
                      ) -> LeaderboardFilters:
    return board_filters(format, tag, judge, since, until, series)


@router.get("/leaderboard", tags=["results"], summary="The leaderboard, with the page's filters")
async def get_leaderboard(api: CallerDep, filters: Annotated[LeaderboardFilters, Depends(board_query)],
                          ) -> dict[str, Any]:
    await api.require(Action.LIST)
    return (await leaderboard(api.engine.store, filters)).public()


@router.get("/leaderboard/head-to-head", tags=["results"], summary="Two models' record against each other")
async def head_to_head(api: CallerDep, a: Annotated[str, Query(description="provider:model")],
                       b: Annotated[str, Query(description="provider:model")],
                       filters: Annotated[LeaderboardFilters, Depends(board_query)]) -> dict[str, Any]:
    await api.require(Action.LIST)
    board = await leaderboard(api.engine.store, filters)
    pair = board.pair(a, b)
    if pair is None:
        raise HTTPException(404, f"no judged debate between {a} and {b} with these filters")
    data = pair.public()
    data["briefs"] = {d: brief.model_dump(mode="json") for d in pair.debates if (brief := board.brief(d)) is not None}
    return data


@router.get("/judges", tags=["results"], summary="Judge health, per judge model")
async def judges(api: CallerDep) -> dict[str, Any]:
    await api.require(Action.LIST)
    return (await judge_health(api.engine.store).report()).public()


# --- tournaments ------------------------------------------------------------------------------------


@router.post("/tournaments", status_code=201, response_model=Created, tags=["tournaments"],
             summary="Create and start a tournament")
async def create_tournament(tournament: Tournament, request: Request, api: CallerDep) -> Created:
    try:
        stored = await api.gate.start_tournament(tournament.model_copy(update={"id": ""}),
                                                 await runtime.current().tournaments())
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    except ConfigError as exc:
        raise config_problem(exc) from None
    return Created(id=stored.id, url=page_url(request, f"/tournaments/{stored.id}"))


async def _tournament(api: Caller, tournament_id: str) -> TournamentRow:
    row = await TournamentStore(api.engine.store).get(tournament_id)
    if row is None:
        raise HTTPException(404, f"no tournament {tournament_id!r}")
    return row


@router.get("/tournaments/{tournament_id}", response_model=TournamentView, tags=["tournaments"],
            summary="A tournament and where it stands")
async def get_tournament(tournament_id: str, api: CallerDep) -> TournamentView:
    await api.require(Action.LIST)
    row = await _tournament(api, tournament_id)
    now = await progress(TournamentStore(api.engine.store), row)
    table = standings(row.tournament, now.debates)
    eta = now.eta_seconds if now.eta_seconds is None or math.isfinite(now.eta_seconds) else None
    return TournamentView(
        tournament=row, done=now.done, total=now.total, spent_usd=now.spent, eta_seconds=eta,
        debates={key: d.row for key, d in now.debates.items()},
        standings=[{"model": s.label, "wins": s.wins, "losses": s.losses, "ties": s.ties, "points": s.points}
                   for s in table])


@router.post("/tournaments/{tournament_id}/stop", tags=["tournaments"], summary="Start no further debate")
async def stop_tournament(tournament_id: str, api: CallerDep) -> dict[str, Any]:
    await api.require(Action.STOP)
    row = await _tournament(api, tournament_id)
    try:
        stopping = await api.gate.stop_tournament(row.id, await runtime.current().tournaments())
    except PermissionDenied as exc:
        raise HTTPException(403, str(exc)) from None
    return {"id": row.id, "stopping": stopping}


# --- the live stream --------------------------------------------------------------------------------


@router.get("/debates/{debate_id}/events", tags=["debates"], summary="The debate as Server-Sent Events",
            response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "committed events and streamed text; `id:` is the place in the log"}})
async def debate_events(debate_id: str, request: Request, api: CallerDep,
                        last_event_id: Annotated[str | None, Header(max_length=2000)] = None) -> StreamingResponse:
    session = await readable(api, debate_id)
    hub = await runtime.current().hub()
    return StreamingResponse(events.stream(session, hub, last_event_id, request.is_disconnected),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
