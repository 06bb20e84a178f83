"""The arguments model of one tool method: the pydantic model of its parameters, built
when first needed, that validates a call's input and describes what is wrong with it."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, final

import pydantic
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    with_config,
)
from pydantic_core import SchemaValidator
from typing_extensions import TypedDict

from .._model.errors import ToolError
from .arguments import KeywordsValidator, describe, unknown_fields
from .validation_schema import validation_schema

__all__ = ["ArgumentsModel"]

_RECHECKED_INPUT_CHARS: Final = 16 * 1024
"""Invalid inputs up to this size are described with their unknown fields too."""


@final
class ArgumentsModel:
    """The pydantic model of a tool's parameters, built when first needed.

    A model costs about 0.5 ms and 20 KB (class, core schema, validator, serializer). A server
    with thousands of tools calls few of them, so once its JSON Schema is taken the model is
    dropped and rebuilt on first use. As a class attribute (``MyApp.GetUserArgs``) it reads as
    the model class itself. Calls validate with ``validate``: the same fields and rules, but
    as a dict of keyword arguments, without a model instance per call.
    """

    __slots__ = (
        "_fields",
        "_model",
        "_module",
        "_name",
        "_qualname",
        "_strict_validator",
        "_validator",
        "_where",
    )

    def __init__(
        self, name: str, qualname: str, module: str, fields: dict[str, Any], where: str
    ) -> None:
        self._name, self._qualname, self._module = name, qualname, module
        self._fields = fields
        self._where = where
        self._model: type[BaseModel] | None = None
        self._validator: KeywordsValidator | None = None
        self._strict_validator: KeywordsValidator | None = None

    def get(self) -> type[BaseModel]:
        """The model class, built on first use."""
        if self._model is None:
            self._model = self._build()
        return self._model

    def release(self) -> None:
        """Drop the model; ``get`` builds it again."""
        self._model = None

    def validate(self, input_json: str) -> dict[str, Any]:
        """The method's keyword arguments from ``input_json``; missing optional ones get their
        defaults. ``ToolError.InvalidArgument`` says, in one line, what is wrong where."""
        try:
            values = (self._validator or self._build_validator())(input_json)
        except ValidationError as error:
            raise ToolError.InvalidArgument(self._describe(input_json, error)) from None
        if len(values) > len(self._fields):  # extras are allowed in, then refused here
            unknown = [name for name in values if name not in self._fields]
            raise ToolError.InvalidArgument(unknown_fields(unknown))
        return values

    def __get__(self, instance: object, owner: type | None = None) -> type[BaseModel]:
        return self.get()

    def _build(self) -> type[BaseModel]:
        try:
            model: type[BaseModel] = pydantic.create_model(
                self._name,
                __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
                __module__=self._module,
                **self._fields,
            )
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
            raise TypeError(
                f"{self._where}: a parameter type has no JSON Schema: {error}"
            ) from error
        model.__qualname__ = self._qualname
        return model

    def _describe(self, input_json: str, error: ValidationError) -> str:
        """The problems of an invalid input. A small input is validated again refusing
        unknown fields, so that one message names them beside the other problems."""
        if len(input_json) > _RECHECKED_INPUT_CHARS:
            return describe(error)
        if self._strict_validator is None:
            self._strict_validator = self._keywords_validator(extra="forbid")
        try:
            self._strict_validator(input_json)
        except ValidationError as strict_error:
            return describe(strict_error)
        return describe(error)

    def _build_validator(self) -> KeywordsValidator:
        # Unknown fields are let in and refused by ``validate``: pydantic would make one error
        # per unknown field, and a request can hold hundreds of thousands of them.
        validator = self._validator = self._keywords_validator(extra="allow")
        return validator

    def _keywords_validator(self, *, extra: Literal["allow", "forbid"]) -> KeywordsValidator:
        keywords: dict[str, Any] = {
            name: annotation if default is ... else Annotated[annotation, Field(default=default)]
            for name, (annotation, default) in self._fields.items()
        }
        # ``allow_inf_nan=False``: a float parameter refuses what would reach it as NaN or
        # infinity (an integer too large, the string "inf"); nested models keep their config.
        config = ConfigDict(extra=extra, allow_inf_nan=False)
        shape = with_config(config)(TypedDict(self._name, keywords))  # type: ignore[operator]
        schema = validation_schema(TypeAdapter[Any](shape).core_schema)
        validator: KeywordsValidator = SchemaValidator(schema).validate_json
        return validator
