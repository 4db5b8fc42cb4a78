"""The parts a task declares: setup actions that seed the phone and checks that judge its end state.

Each is a frozen pydantic model read from a task's YAML (:mod:`planner_runtime.tasks.spec`);
a list item of ``setup`` or ``checks`` is exactly one kind (:class:`SetupAction`,
:class:`CheckSpec`). String fields marked as templates are filled from the task's parameters
(:mod:`planner_runtime.tasks.templates` checks they render); a ``where`` can only ever hold
its parameters as data (:mod:`planner_runtime.tasks.where`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from planner_runtime.tasks.where import WhereTemplate, parse_where


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContentRows(SpecModel):
    """Rows of a content provider, optionally filtered by a ``where`` clause (a template whose
    parameters are written as SQL values: see :mod:`planner_runtime.tasks.where`)."""

    uri: str = Field(pattern=r"^content://")
    where: str | None = None

    @field_validator("where")
    @classmethod
    def _where_is_safe(cls, where: str | None) -> str | None:
        if where is not None:
            parse_where(where)  # a WhereError is a ValueError: pydantic reports it at this field
        return where

    @property
    def where_template(self) -> WhereTemplate | None:
        return parse_where(self.where) if self.where else None


class ContentCheck(ContentRows):
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _range(self) -> ContentCheck:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}{', the default' if self.min == 1 else ''}) is greater than max ({self.max}); "
                             "for 'no such rows' write min: 0, max: 0")
        return self


class ContentInsert(SpecModel):
    uri: str = Field(pattern=r"^content://")
    values: dict[str, str | int | float | bool | None]


class MemorySeed(SpecModel):
    """A memory the user's profile holds before the episode (text and trigger are templates)."""

    kind: str = Field(default="preference", pattern=r"^(preference|fact|episodic|intent)$")
    text: str = Field(min_length=1)
    trigger: str | None = None  # intents: app:NAME, time:ISO, place:NAME or event:NAME
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _trigger_iff_intent(self) -> MemorySeed:
        if (self.kind == "intent") != (self.trigger is not None):
            raise ValueError("an intent needs a trigger (KIND:VALUE), and only an intent has one")
        return self


class _OneOf(SpecModel):
    """A list item that is exactly one of several single-key kinds."""

    @model_validator(mode="after")
    def _exactly_one(self) -> _OneOf:
        kinds = [name for name in type(self).model_fields if name != "name" and getattr(self, name) is not None]
        if len(kinds) != 1:
            allowed = ", ".join(n for n in type(self).model_fields if n != "name")
            raise ValueError(f"give exactly one of: {allowed} (got {', '.join(kinds) or 'none'})")
        return self

    @property
    def kind(self) -> str:
        return next(n for n in type(self).model_fields if n != "name" and getattr(self, n) is not None)


Scalar = str | int | float | bool


class SettingPut(SpecModel):
    """``settings put NAMESPACE KEY VALUE`` (the value is a template when a string)."""

    namespace: str = Field(pattern=r"^(system|secure|global)$")
    key: str = Field(min_length=1)
    value: Scalar


class FilePush(SpecModel):
    """A file written onto the phone before the episode (path and content are templates)."""

    path: str = Field(pattern=r"^/")
    content: str = ""


class FolderEmpty(SpecModel):
    """Every file and folder inside ``path`` deleted before the episode; the folder itself stays
    (a template; shared storage only, so a typo cannot empty the system)."""

    path: str = Field(pattern=r"^/(sdcard|storage)/[^/]\S*$")

    @field_validator("path")
    @classmethod
    def _no_parent(cls, path: str) -> str:
        if ".." in path.split("/"):
            raise ValueError("a folder to empty is named without '..'")
        return path.rstrip("/")


class AnswerNumber(SpecModel):
    """A number written in the answer is ``value`` within ``tolerance`` (a template string is
    rendered, then read as a number)."""

    value: float | str
    tolerance: float = Field(default=0.0, ge=0.0)


class CalledCheck(SpecModel):
    """How often ``tool`` was called. Without bounds: at least once; ``max: 0``: never."""

    tool: str = Field(min_length=1)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @property
    def bounds(self) -> tuple[int, int | None]:
        low = self.min if self.min is not None else (0 if self.max is not None else 1)
        return low, self.max


class AskedBefore(SpecModel):
    """The user was asked (``ask_user``, or a confirmation) before ``tool`` first ran."""

    tool: str = Field(min_length=1)


class SettingCheck(SpecModel):
    """``settings get`` equals ``equals`` (null: the key is unset)."""

    namespace: str = Field(pattern=r"^(system|secure|global)$")
    key: str = Field(min_length=1)
    equals: Scalar | None


class FileCheck(SpecModel):
    """A file exists (or not) on the phone and, optionally, its text contains a string."""

    path: str = Field(pattern=r"^/")
    exists: bool = True
    contains: str | None = None

    @model_validator(mode="after")
    def _contains_needs_file(self) -> FileCheck:
        if self.contains is not None and not self.exists:
            raise ValueError("`contains` needs `exists: true`")
        return self


_COLLECTION = r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$"  # family.collection of the simulated world


class WorldSeed(SpecModel):
    """Rows written into a simulated collection before the episode (string values are
    templates): each takes the place of the row with its key, or with ``replace`` the
    collection holds these rows only."""

    collection: str = Field(pattern=_COLLECTION)
    rows: tuple[dict[str, Scalar | None], ...] = ()
    replace: bool = False


class WorldCheck(SpecModel):
    """The simulated world's end state: between ``min`` and ``max`` rows of ``collection``
    match ``match`` (a key may end in ``~`` contains, ``<=``, ``>=`` or ``!=``; values are
    templates) and, with ``field``, each of them holds ``equals`` there (numbers within
    ``tolerance``)."""

    collection: str = Field(pattern=_COLLECTION)
    match: dict[str, Scalar | None] = Field(default_factory=dict)
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=0)
    field: str | None = None
    equals: Scalar | None = None
    tolerance: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _consistent(self) -> WorldCheck:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max}); for 'no such rows' write min: 0, max: 0")
        if (self.field is None) != ("equals" not in self.model_fields_set):
            raise ValueError("field and equals go together: the value each matching row holds in that field")
        return self


class SetupAction(_OneOf):
    content_insert: ContentInsert | None = None
    content_delete: ContentRows | None = None
    memory: MemorySeed | None = None
    settings_put: SettingPut | None = None
    file_push: FilePush | None = None
    folder_empty: FolderEmpty | None = None
    world: WorldSeed | None = None


class CheckSpec(_OneOf):
    name: str | None = None
    content: ContentCheck | None = None
    answer_contains: str | None = None
    # The answer names none of these (the wrong candidates), so listing every candidate fails.
    answer_excludes: tuple[str, ...] | None = Field(default=None, min_length=1)
    answer_equals: str | None = None
    answer_number: AnswerNumber | None = None
    called: CalledCheck | None = None
    asked_before: AskedBefore | None = None
    max_steps_used: int | None = Field(default=None, ge=1)
    setting: SettingCheck | None = None
    file: FileCheck | None = None
    world: WorldCheck | None = None
