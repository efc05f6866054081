"""The built-in debate formats, as declarations.

A format is a list of phases. A phase names its speakers in order (by side: `pro`, `con`,
`moderator`, or `*` for every debater), how many turns each takes, how often the speaker list
repeats (`repeat`, which may name a config field such as `questions`), its instruction, its word
limit and whether its speakers go in parallel. Phases with `scope="round"` form the round block,
repeated under the format's termination policy. Adding a format is adding a declaration here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Act = Literal["speak", "prepare", "ask", "answer", "propose", "critique", "refine", "synthesize"]


class Slot(BaseModel):
    """One speaking slot in a phase: which side speaks and what it does."""

    side: str
    act: Act = "speak"


class Phase(BaseModel):
    """One phase of a format."""

    id: str
    title: str
    instruction: str
    speakers: list[Slot]
    turns_per_speaker: int = Field(default=1, ge=1)
    repeat: int | Literal["questions"] = 1
    word_limit: int | None = 300
    parallel: bool = False
    scope: Literal["once", "round"] = "once"
    private: bool = False  # turns visible only to their own speaker (preparation notes)
    optional: Literal["show_preparation"] | None = None  # config flag that makes the phase visible


class Termination(BaseModel):
    """When the round block stops repeating; always under the hard cap `max_rounds`."""

    kind: Literal["fixed", "judge", "convergence", "quality"] = "fixed"
    # The user may pick the evaluation instead (DebateConfig.evaluation: quality, convergence or
    # fixed), judged against DebateConfig.quality_threshold.
    configurable: bool = False
    default_rounds: int = 1
    min_rounds: int = 1
    max_rounds: int = 1


class Seat(BaseModel):
    """A member of a format's default cast."""

    name: str
    position: str


class Format(BaseModel):
    """A complete format declaration."""

    id: str
    title: str
    description: str
    phases: list[Phase]
    termination: Termination = Field(default_factory=Termination)
    cast: list[Seat]
    min_participants: int = 2
    max_participants: int = 8
    has_rounds: bool = False
    clarification: bool = False  # agents may ask the user questions before round one
    judge_synthesis: bool = False  # the judge writes a final synthesis

    def phase(self, phase_id: str) -> Phase:
        for phase in self.phases:
            if phase.id == phase_id:
                return phase
        raise KeyError(phase_id)

    @property
    def sides(self) -> set[str]:
        """Named sides the format needs at least one participant for."""
        return {slot.side for phase in self.phases for slot in phase.speakers if slot.side != "*"}


def _s(*sides: str, act: Act = "speak") -> list[Slot]:
    return [Slot(side=side, act=act) for side in sides]


_ASK_ANSWER = "Ask one sharp question that exposes a weakness in the opponent's case. Question only."
_ANSWER = "Answer the question you were just asked directly and briefly, then defend your case."

CLASSIC = Format(
    id="classic",
    title="Classic",
    description="Preparation, opening, rebuttal, cross-examination and closing between two sides.",
    cast=[Seat(name="Affirmative", position="pro"), Seat(name="Negative", position="con")],
    has_rounds=True,
    termination=Termination(default_rounds=1, min_rounds=1, max_rounds=5),
    phases=[
        Phase(
            id="preparation",
            title="Preparation",
            instruction="Privately plan your case: your three strongest arguments and the attacks you "
            "expect.",
            speakers=_s("pro", "con", act="prepare"),
            parallel=True,
            private=True,
            optional="show_preparation",
            word_limit=200,
        ),
        Phase(
            id="opening",
            title="Opening statements",
            instruction="Give your opening statement: state your position and your main arguments.",
            speakers=_s("pro", "con"),
            word_limit=300,
        ),
        Phase(
            id="rebuttal",
            title="Rebuttal",
            instruction="Rebut your opponent's arguments point by point and reinforce your own case.",
            speakers=_s("pro", "con"),
            scope="round",
            word_limit=250,
        ),
        Phase(
            id="cross-aff",
            title="Cross-examination: affirmative asks",
            instruction=f"Affirmative asks, negative answers. {_ASK_ANSWER}",
            speakers=[Slot(side="pro", act="ask"), Slot(side="con", act="answer")],
            repeat="questions",
            word_limit=120,
        ),
        Phase(
            id="cross-neg",
            title="Cross-examination: negative asks",
            instruction=f"Negative asks, affirmative answers. {_ASK_ANSWER}",
            speakers=[Slot(side="con", act="ask"), Slot(side="pro", act="answer")],
            repeat="questions",
            word_limit=120,
        ),
        Phase(
            id="closing",
            title="Closing statements",
            instruction="Close: summarise why your side won the exchange, citing what was said.",
            speakers=_s("pro", "con"),
            word_limit=200,
        ),
    ],
)

SIX_PHASE = Format(
    id="six-phase",
    title="Six-phase",
    description="Opening, three constructive sub-rounds, cross-examination, rebuttal, closing and a "
    "moderator's synthesis.",
    cast=[
        Seat(name="Pro", position="pro"),
        Seat(name="Con", position="con"),
        Seat(name="Moderator", position="moderator"),
    ],
    min_participants=3,
    phases=[
        Phase(id="opening", title="Opening", instruction="State your position and the case you will make.",
              speakers=_s("pro", "con"), word_limit=250),
        Phase(id="constructive-economic", title="Constructive: economic",
              instruction="Build your case on the economic dimension: costs, benefits, incentives.",
              speakers=_s("pro", "con"), word_limit=220),
        Phase(id="constructive-ethical", title="Constructive: ethical",
              instruction="Build your case on the ethical dimension: rights, fairness, harms.",
              speakers=_s("pro", "con"), word_limit=220),
        Phase(id="constructive-practical", title="Constructive: practical",
              instruction="Build your case on the practical dimension: feasibility and implementation.",
              speakers=_s("pro", "con"), word_limit=220),
        Phase(id="cross-examination", title="Cross-examination",
              instruction=f"{_ASK_ANSWER} When answering: {_ANSWER}",
              speakers=[Slot(side="pro", act="ask"), Slot(side="con", act="answer"),
                        Slot(side="con", act="ask"), Slot(side="pro", act="answer")],
              word_limit=120),
        Phase(id="rebuttal", title="Rebuttal", instruction="Rebut the strongest points made against you.",
              speakers=_s("con", "pro"), word_limit=220),
        Phase(id="closing", title="Closing", instruction="Close your case, citing what was said.",
              speakers=_s("con", "pro"), word_limit=180),
        Phase(id="synthesis", title="Moderator synthesis",
              instruction="As moderator, summarise both cases fairly: agreements, disagreements, open "
              "questions.",
              speakers=_s("moderator", act="synthesize"), word_limit=300),
    ],
)

OXFORD = Format(
    id="oxford",
    title="Oxford",
    description="Opening statements from everyone, then rounds of rebuttal, then the judge.",
    cast=[Seat(name="Proposition", position="pro"), Seat(name="Opposition", position="con")],
    has_rounds=True,
    termination=Termination(default_rounds=3, min_rounds=1, max_rounds=10),
    phases=[
        Phase(id="opening", title="Opening statements", instruction="Give your opening statement.",
              speakers=_s("*"), word_limit=300),
        Phase(id="rebuttal", title="Rebuttal", instruction="Rebut the other side's latest arguments.",
              speakers=_s("*"), scope="round", word_limit=220),
    ],
)

LINCOLN_DOUGLAS = Format(
    id="lincoln-douglas",
    title="Lincoln-Douglas",
    description="One-on-one value debate: constructives, cross-examinations and rebuttals.",
    cast=[Seat(name="Affirmative", position="pro"), Seat(name="Negative", position="con")],
    max_participants=2,  # one-on-one by definition
    phases=[
        Phase(id="aff-constructive", title="Affirmative constructive",
              instruction="Present the affirmative case: the value, the criterion and contentions.",
              speakers=_s("pro"), word_limit=350),
        Phase(id="cross-by-neg", title="Cross-examination by negative",
              instruction=f"Negative asks, affirmative answers. {_ASK_ANSWER}",
              speakers=[Slot(side="con", act="ask"), Slot(side="pro", act="answer")],
              repeat="questions", word_limit=120),
        Phase(id="neg-constructive", title="Negative constructive",
              instruction="Present the negative case and attack the affirmative's value and criterion.",
              speakers=_s("con"), word_limit=350),
        Phase(id="cross-by-aff", title="Cross-examination by affirmative",
              instruction=f"Affirmative asks, negative answers. {_ASK_ANSWER}",
              speakers=[Slot(side="pro", act="ask"), Slot(side="con", act="answer")],
              repeat="questions", word_limit=120),
        Phase(id="aff-rebuttal", title="Affirmative rebuttal", instruction="Rebut the negative case.",
              speakers=_s("pro"), word_limit=250),
        Phase(id="neg-rebuttal", title="Negative rebuttal",
              instruction="Rebut the affirmative and crystallise the voting issues.",
              speakers=_s("con"), word_limit=300),
        Phase(id="aff-closing", title="Affirmative closing rebuttal",
              instruction="Final rebuttal: answer the negative and tell the judge why you win.",
              speakers=_s("pro"), word_limit=200),
    ],
)

ROUNDTABLE = Format(
    id="roundtable",
    title="Roundtable",
    description="Three to eight participants speak in turn for several rounds.",
    cast=[
        Seat(name="Optimist", position="optimist"),
        Seat(name="Skeptic", position="skeptic"),
        Seat(name="Pragmatist", position="pragmatist"),
    ],
    min_participants=3,
    max_participants=8,
    has_rounds=True,
    termination=Termination(default_rounds=3, min_rounds=1, max_rounds=10),
    phases=[
        Phase(id="discussion", title="Discussion",
              instruction="Speak from your perspective and respond to what the others just said.",
              speakers=_s("*"), scope="round", word_limit=200),
    ],
)

STRUCTURED = Format(
    id="structured",
    title="Structured",
    description="Opening, two rebuttals and closing; everyone in a phase speaks at the same time.",
    cast=[Seat(name="Pro", position="pro"), Seat(name="Con", position="con")],
    phases=[
        Phase(id="opening", title="Opening", instruction="Give your opening statement.",
              speakers=_s("*"), parallel=True, word_limit=300),
        Phase(id="rebuttal-1", title="Rebuttal 1", instruction="Rebut the opening statements.",
              speakers=_s("*"), parallel=True, word_limit=250),
        Phase(id="rebuttal-2", title="Rebuttal 2", instruction="Rebut the first rebuttals.",
              speakers=_s("*"), parallel=True, word_limit=250),
        Phase(id="closing", title="Closing", instruction="Give your closing statement.",
              speakers=_s("*"), parallel=True, word_limit=200),
    ],
)

ROUND_LIMITED = Format(
    id="round-limited",
    title="Round-limited",
    description="Free exchange for a fixed number of rounds under a hard cap.",
    cast=[Seat(name="Pro", position="pro"), Seat(name="Con", position="con")],
    has_rounds=True,
    termination=Termination(default_rounds=3, min_rounds=1, max_rounds=20),
    phases=[
        Phase(id="exchange", title="Exchange",
              instruction="Respond to the latest argument and advance your own.",
              speakers=_s("*"), scope="round", word_limit=220),
    ],
)

FREE_FORM = Format(
    id="free-form",
    title="Free-form",
    description="Open exchange; after each round the judge decides whether to continue.",
    cast=[Seat(name="Pro", position="pro"), Seat(name="Con", position="con")],
    has_rounds=True,
    termination=Termination(kind="judge", default_rounds=6, min_rounds=1, max_rounds=12),
    phases=[
        Phase(id="exchange", title="Exchange",
              instruction="Respond to the latest argument and advance your own.",
              speakers=_s("*"), scope="round", word_limit=220),
    ],
)

CONVERGENCE = Format(
    id="convergence",
    title="Convergence",
    description="Participants look for common ground; it ends when the judge rates agreement high "
    "enough or declares the positions irreconcilable.",
    cast=[Seat(name="Pro", position="pro"), Seat(name="Con", position="con")],
    has_rounds=True,
    termination=Termination(kind="convergence", default_rounds=8, min_rounds=1, max_rounds=12),
    phases=[
        Phase(id="exchange", title="Exchange",
              instruction="Engage with the other side's strongest point, concede what is right, and "
              "propose common ground where you can.",
              speakers=_s("*"), scope="round", word_limit=220),
    ],
)

COLLABORATIVE = Format(
    id="collaborative",
    title="Collaborative",
    description="Clarify with the user, then rounds of proposal, critique and refinement, then a "
    "synthesis by the judge.",
    cast=[Seat(name="Architect", position="architect"), Seat(name="Critic", position="critic")],
    has_rounds=True,
    clarification=True,
    judge_synthesis=True,
    termination=Termination(kind="quality", configurable=True, default_rounds=3, min_rounds=1, max_rounds=6),
    phases=[
        Phase(id="proposal", title="Proposal",
              instruction="Propose a solution. In later rounds, start from your previous refinement.",
              speakers=_s("*", act="propose"), parallel=True, scope="round", word_limit=300),
        Phase(id="critique", title="Critique",
              instruction="Critique every other participant's proposal: strengths, flaws, fixes.",
              speakers=_s("*", act="critique"), parallel=True, scope="round", word_limit=300),
        Phase(id="refinement", title="Refinement",
              instruction="Revise your own proposal using the critiques you received.",
              speakers=_s("*", act="refine"), parallel=True, scope="round", word_limit=300),
    ],
)

FORMATS: dict[str, Format] = {
    f.id: f
    for f in (
        CLASSIC,
        SIX_PHASE,
        OXFORD,
        LINCOLN_DOUGLAS,
        ROUNDTABLE,
        STRUCTURED,
        ROUND_LIMITED,
        FREE_FORM,
        CONVERGENCE,
        COLLABORATIVE,
    )
}


class UnknownFormat(KeyError):
    """Raised for a format id that is not declared."""

    def __str__(self) -> str:
        return f"unknown format {self.args[0]!r}; choose one of: {', '.join(FORMATS)}"


def get_format(format_id: str) -> Format:
    try:
        return FORMATS[format_id]
    except KeyError:
        raise UnknownFormat(format_id) from None
