"""The request bodies of ``POST /v1/chat/completions`` and ``POST /v1/responses``, as the release's schemas
take them: chat completions leniently (unknown keys ignored, most fields may be ``null``), responses
strictly (unknown keys refused; a field left out is fine, a ``null`` one is not). Then the checks the
release makes after its schema, with its texts. The token cap and sampling fields the release hands to
its run's model calls (``sampling()``) go to the request's run as they go there; client tools are
validated the same way, then not applied: clawbus runs never hand a tool call back to the client
(api/routes/openai_compat.py says what that means for ``tool_choice``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from clawbus.api.openai_compat.errors import invalid, schema_message
from clawbus.shared.wire.models import Sampling

# JavaScript's Number.MAX_SAFE_INTEGER: the release's token caps must be "positive safe integers".
MAX_SAFE_INTEGER = 2**53 - 1


def _not_null(expected: str) -> BeforeValidator:
    """zod's ``.optional()``: a field may be left out, but an explicit ``null`` is refused."""

    def check(value: Any) -> Any:
        if value is None:
            raise PydanticCustomError("js_type", "expected {expected}", {"expected": expected})
        return value

    return BeforeValidator(check)


Number = StrictFloat  # also takes JSON integers, never booleans
PositiveInt = Annotated[StrictInt, Field(gt=0)]
OptionalString = Annotated[StrictStr | None, _not_null("string")]
OptionalBool = Annotated[StrictBool | None, _not_null("boolean")]
OptionalArray = Annotated[list[Any] | None, _not_null("array")]


class _Body(BaseModel):
    # Fields that are unions in the release's schema: refused whole (``<field>: Invalid input``).
    UNIONS: ClassVar[frozenset[str]] = frozenset()


BodyT = TypeVar("BodyT", bound=_Body)


def parse(model: type[BodyT], data: Any) -> BodyT:
    """``data`` (the decoded JSON) as ``model``, or the release's 400 naming the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(schema_message(exc.errors(), model.UNIONS)) from None


def decode(raw: bytes) -> Any:
    """The body as JSON; an empty body is ``{}``, as the release reads it."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise invalid(str(exc)) from None


# --- chat completions -------------------------------------------------------------------------------------


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: OptionalBool = None


class ChatCompletionRequest(_Body):
    model_config = ConfigDict(extra="ignore")
    UNIONS: ClassVar[frozenset[str]] = frozenset({"stop"})

    model: OptionalString = None
    stream: StrictBool | None = None
    stream_options: StreamOptions | None = None
    tools: OptionalArray = None
    tool_choice: Any = None
    messages: OptionalArray = None
    user: OptionalString = None
    max_tokens: PositiveInt | None = None
    max_completion_tokens: PositiveInt | None = None
    temperature: Number | None = None
    top_p: Number | None = None
    response_format: Any = None
    frequency_penalty: Number | None = None
    presence_penalty: Number | None = None
    seed: Number | None = None
    stop: StrictStr | list[StrictStr] | None = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def sampling(self) -> Sampling | None:
        """What the release hands its run's model calls (its ``streamParams``): ``max_completion_tokens``
        over the older ``max_tokens``, and the sampling fields as sent. Call after ``check``."""
        stop = [self.stop] if isinstance(self.stop, str) else self.stop
        asked = Sampling(
            max_tokens=self.max_completion_tokens or self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            frequency_penalty=self.frequency_penalty,
            presence_penalty=self.presence_penalty,
            seed=None if self.seed is None else int(self.seed),
            stop=stop or None,
            response_format=None if self.response_format is None else dict(self.response_format),
        )
        return None if asked.is_empty() else asked

    def check(self) -> None:
        """What the release checks after its schema, in its order and with its texts."""
        for field in ("max_completion_tokens", "max_tokens"):
            value = getattr(self, field)
            if value is not None and value > MAX_SAFE_INTEGER:
                raise invalid(f"{field} must be a positive safe integer")
        _check_response_format(self.response_format)
        _check_stop(self.stop)
        problem = self._sampling_problem()
        if problem:
            raise invalid(problem)

    def _sampling_problem(self) -> str | None:
        bounds = (
            ("temperature", self.temperature, 0, 2, "0 and 2"),
            ("top_p", self.top_p, 0, 1, "0 and 1"),
            ("frequency_penalty", self.frequency_penalty, -2, 2, "-2.0 and 2.0"),
            ("presence_penalty", self.presence_penalty, -2, 2, "-2.0 and 2.0"),
        )
        for name, value, low, high, said in bounds:
            if value is None:
                continue
            if not math.isfinite(value):
                return f"`{name}` must be a finite number."
            if not low <= value <= high:
                return f"`{name}` must be between {said}."
        if self.seed is not None and not math.isfinite(self.seed):
            return "`seed` must be a finite number."
        if self.seed is not None and not float(self.seed).is_integer():
            return "`seed` must be an integer."
        return None


def _check_response_format(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise invalid("Invalid response_format: response_format must be an object")
    if value.get("type") not in ("text", "json_object", "json_schema"):
        raise invalid(
            "Invalid response_format: response_format.type must be text, json_object, or json_schema"
        )


def _check_stop(value: str | list[str] | None) -> None:
    sequences = [value] if isinstance(value, str) else value or []
    if len(sequences) > 4:
        raise invalid("Invalid stop: stop supports at most 4 sequences")
    if any(not sequence for sequence in sequences):
        raise invalid("Invalid stop: stop entries must be non-empty strings")


# --- responses --------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputText(_Strict):
    type: Literal["input_text"]
    text: StrictStr


class OutputText(_Strict):
    type: Literal["output_text"]
    text: StrictStr


class InputMedia(_Strict):
    """An image or a file: accepted by the schema, refused by clawbus in the message it answers (its runs
    take text only)."""

    type: Literal["input_image", "input_file"]
    source: dict[str, Any]


ContentPart = Annotated[InputText | OutputText | InputMedia, Field(discriminator="type")]
ItemStatus = Literal["in_progress", "completed", "incomplete"]


class MessageItem(_Strict):
    type: Literal["message"]
    id: StrictStr | None = None
    role: Literal["system", "developer", "user", "assistant"]
    content: StrictStr | list[ContentPart]
    phase: Literal["commentary", "final_answer"] | None = None
    status: ItemStatus | None = None

    @model_validator(mode="after")
    def _phase_on_assistant_only(self) -> MessageItem:
        if self.phase is not None and self.role != "assistant":
            raise ValueError("`phase` is only valid on assistant messages.")
        return self

    @property
    def has_media(self) -> bool:
        return not isinstance(self.content, str) and any(isinstance(p, InputMedia) for p in self.content)


class FunctionCallItem(_Strict):
    type: Literal["function_call"]
    id: StrictStr | None = None
    call_id: StrictStr | None = None
    name: StrictStr
    arguments: StrictStr
    status: ItemStatus | None = None


class FunctionCallOutputItem(_Strict):
    type: Literal["function_call_output"]
    call_id: StrictStr
    output: StrictStr


class ReasoningItem(_Strict):
    type: Literal["reasoning"]
    content: StrictStr | None = None
    encrypted_content: StrictStr | None = None
    summary: StrictStr | None = None


class ItemReference(_Strict):
    type: Literal["item_reference"]
    id: StrictStr


InputItem = Annotated[
    MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem | ItemReference,
    Field(discriminator="type"),
]


def _named(value: str) -> str:
    if not value:
        raise ValueError("Tool name cannot be empty")
    return value


class ToolDefinition(_Strict):
    type: Literal["function"]
    name: Annotated[StrictStr, AfterValidator(_named)]
    description: OptionalString = None
    parameters: Annotated[dict[str, Any] | None, _not_null("object")] = None
    strict: OptionalBool = None


class FunctionChoice(_Strict):
    type: Literal["function"]
    name: Annotated[StrictStr, Field(min_length=1)]


class FunctionName(BaseModel):
    name: Annotated[StrictStr, Field(min_length=1)]


class NestedFunctionChoice(_Strict):
    type: Literal["function"]
    function: FunctionName


ToolChoice = Literal["auto", "none", "required"] | FunctionChoice | NestedFunctionChoice


class TextFormat(_Strict):
    type: Literal["text"]


class TextConfig(_Strict):
    format: TextFormat


class ReasoningConfig(BaseModel):
    effort: Literal["low", "medium", "high"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None


class ResponsesRequest(_Body):
    model_config = ConfigDict(extra="forbid")
    UNIONS: ClassVar[frozenset[str]] = frozenset({"input", "tool_choice"})

    model: StrictStr
    input: StrictStr | list[InputItem]
    instructions: OptionalString = None
    tools: Annotated[list[ToolDefinition] | None, _not_null("array")] = None
    tool_choice: Annotated[ToolChoice | None, _not_null("union")] = None
    text: Annotated[TextConfig | None, _not_null("object")] = None
    stream: OptionalBool = None
    max_output_tokens: Annotated[PositiveInt | None, _not_null("number")] = None
    max_tool_calls: Annotated[PositiveInt | None, _not_null("number")] = None
    user: OptionalString = None
    temperature: Annotated[Number | None, _not_null("number"), Field(ge=0, le=2)] = None
    top_p: Annotated[Number | None, _not_null("number"), Field(ge=0, le=1)] = None
    metadata: Annotated[dict[str, StrictStr] | None, _not_null("record")] = None
    store: OptionalBool = None
    previous_response_id: OptionalString = None
    reasoning: Annotated[ReasoningConfig | None, _not_null("object")] = None
    truncation: Annotated[Literal["auto", "disabled"] | None, _not_null("string")] = None

    def sampling(self) -> Sampling | None:
        """What the release hands its run's model calls here: the output cap, temperature and top_p."""
        asked = Sampling(max_tokens=self.max_output_tokens, temperature=self.temperature, top_p=self.top_p)
        return None if asked.is_empty() else asked
