"""The tools the official MCP conformance suite's server scenarios call, as llmworker tools
(``make mcp-conformance`` serves them with ``--tools tests.conformance.fixture_tools:Fixture``
and ``--tools tests.conformance.fixture_tools:json_schema_2020_12_tool``)."""

from __future__ import annotations

import asyncio
import base64
import json

from llmworker import (
    Audio,
    Elicit,
    EmbeddedResource,
    Image,
    JsonValue,
    ListRoots,
    Question,
    Sample,
    ToolContext,
    ToolError,
    ToolFactory,
    ToolMeta,
    ToolOutput,
    tool,
    tool_registry,
)

# a 1x1 red PNG and a 1-sample WAV, as the scenarios suggest
RED_PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SILENCE = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==")


@tool_registry
class Fixture:
    @tool
    async def test_simple_text(self) -> str:
        """Returns a simple text response."""
        return "This is a simple text response for testing."

    @tool
    async def test_image_content(self) -> ToolOutput:
        """Returns a PNG image."""
        return ToolOutput("", attachments=(Image(RED_PIXEL, "image/png"),))

    @tool
    async def test_audio_content(self) -> ToolOutput:
        """Returns a WAV sound."""
        return ToolOutput("", attachments=(Audio(SILENCE, "audio/wav"),))

    @tool
    async def test_embedded_resource(self) -> ToolOutput:
        """Returns an embedded text resource."""
        resource = EmbeddedResource(
            "test://embedded-resource",
            text="This is an embedded resource content.",
            mime_type="text/plain",
        )
        return ToolOutput("", attachments=(resource,))

    @tool
    async def test_multiple_content_types(self) -> ToolOutput:
        """Returns text, an image and an embedded JSON resource."""
        resource = EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        )
        return ToolOutput(
            "Multiple content types test:",
            attachments=(Image(RED_PIXEL, "image/png"), resource),
        )

    @tool
    async def test_error_handling(self) -> str:
        """Always fails."""
        raise ToolError.ExecutionFailed("This tool intentionally returns an error for testing")

    @tool
    async def test_tool_with_progress(self, context: ToolContext) -> str:
        """Reports progress 0, 50 and 100 of 100."""
        for step in (0, 50, 100):
            context.report_progress(step, 100)
            if step < 100:
                await asyncio.sleep(0.06)
        return "Progress reported: 0, 50, 100 of 100"

    @tool
    async def test_tool_with_logging(self, context: ToolContext) -> str:
        """Logs three lines at info, 50 ms apart."""
        context.log("info", "Tool execution started")
        await asyncio.sleep(0.05)
        context.log("info", "Tool processing data")
        await asyncio.sleep(0.05)
        context.log("info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @tool
    async def test_logging_tool(self, context: ToolContext) -> str:
        """Logs one line at info (sent only when the request asked for that level)."""
        context.log("info", "a line the client asked for, or not")
        return "logged"

    @tool
    async def test_sampling(self, context: ToolContext, prompt: str) -> str:
        """Asks the client's model to answer the prompt."""
        answer = await context.sample(prompt, max_tokens=100)
        return f"LLM response: {answer.text}"

    @tool
    async def test_elicitation(self, context: ToolContext, message: str) -> str:
        """Asks the person for a user name and an email address."""
        answer = await context.elicit(
            message, _form(username="User's response", email="User's email address")
        )
        return f"User response: <action: {answer.action}, content: {_json(answer.content)}>"

    @tool
    async def test_elicitation_sep1034_defaults(self, context: ToolContext) -> str:
        """Asks a form whose every field has a default."""
        schema: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        }
        answer = await context.elicit("Please review your details", schema)
        return f"Elicitation completed: action={answer.action}, content={_json(answer.content)}"

    @tool
    async def test_elicitation_sep1330_enums(self, context: ToolContext) -> str:
        """Asks a form with the five kinds of enum."""
        options = ["option1", "option2", "option3"]
        schema: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        }
        answer = await context.elicit("Pick your options", schema)
        return f"Elicitation completed: action={answer.action}, content={_json(answer.content)}"

    @tool
    async def test_input_required_result_elicitation(self, context: ToolContext) -> str:
        """Asks the person's name (key user_name), then greets them."""
        answer = await context.elicit("What is your name?", _form(name=None), key="user_name")
        return f"Hello, {answer.content.get('name')}!"

    @tool
    async def test_input_required_result_sampling(self, context: ToolContext) -> str:
        """Asks the client's model a question (key capital_question)."""
        answer = await context.sample(
            "What is the capital of France?", max_tokens=100, key="capital_question"
        )
        return answer.text

    @tool
    async def test_input_required_result_list_roots(self, context: ToolContext) -> str:
        """Asks the client's roots (key client_roots)."""
        roots = await context.list_roots(key="client_roots")
        return "Roots: " + ", ".join(root.uri for root in roots)

    @tool
    async def test_input_required_result_request_state(self, context: ToolContext) -> str:
        """Asks for a confirmation (key confirm); the answer comes back with the state."""
        await context.elicit("Please confirm", _form(ok="boolean"), key="confirm")
        return "state-ok: confirmed"

    @tool
    async def test_input_required_result_multiple_inputs(self, context: ToolContext) -> str:
        """Asks a name, a greeting from the model and the roots, in one round."""
        answers = await context.ask(
            {
                "user_name": Elicit("What is your name?", _form(name=None)),
                "greeting": Sample("Generate a greeting", max_tokens=50),
                "client_roots": ListRoots(),
            }
        )
        return f"All answered: {sorted(answers)}"

    @tool
    async def test_input_required_result_multi_round(self, context: ToolContext) -> str:
        """Asks a name, then a favourite colour, in two rounds."""
        name = await context.elicit("Step 1: What is your name?", _form(name=None), key="step1")
        color = await context.elicit(
            "Step 2: What is your favorite color?", _form(color=None), key="step2"
        )
        return f"{name.content.get('name')} likes {color.content.get('color')}"

    @tool
    async def test_input_required_result_tampered_state(self, context: ToolContext) -> str:
        """Asks a question whose round state the client must not change."""
        await context.elicit("Anything?", _form(value=None), key="value")
        return "state intact"

    @tool
    async def test_input_required_result_capabilities(self, context: ToolContext) -> str:
        """Asks only what the client declared it can answer."""
        questions: dict[str, Question] = {}
        if context.can_ask(Elicit):
            questions["user_name"] = Elicit("What is your name?", _form(name=None))
        if context.can_ask(Sample):
            questions["greeting"] = Sample("Generate a greeting", max_tokens=50)
        if context.can_ask(ListRoots):
            questions["client_roots"] = ListRoots()
        if not questions:
            return "nothing to ask this client"
        return f"Answered: {sorted(await context.ask(questions))}"

    @tool
    async def test_missing_capability(self, context: ToolContext) -> str:
        """Needs the client's model (sampling), whether or not the client declared it."""
        answer = await context.sample("Say hello", max_tokens=20)
        return answer.text

    @tool
    async def test_streaming_elicitation(self, context: ToolContext) -> str:
        """Asks the person a question."""
        answer = await context.elicit("Continue?", _form(ok="boolean"), key="continue")
        return f"answered {answer.action}"


def _form(**fields: str | None) -> dict[str, JsonValue]:
    """A form of string fields (or booleans, for the value "boolean"), all required;
    a value other than None or "boolean" is the field's description."""
    properties: dict[str, JsonValue] = {}
    for name, value in fields.items():
        if value == "boolean":
            properties[name] = {"type": "boolean"}
        elif value is None:
            properties[name] = {"type": "string"}
        else:
            properties[name] = {"type": "string", "description": value}
    return {"type": "object", "properties": properties, "required": list(fields)}


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


JSON_SCHEMA_2020_12: dict[str, object] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
"""A hand-written schema of JSON Schema 2020-12's keywords, which tools/list must keep."""


class _SchemaEcho:
    async def execute(self, input_json: str) -> str:
        return input_json


json_schema_2020_12_tool = ToolFactory(
    ToolMeta(
        "json_schema_2020_12_tool",
        "Takes a contact whose schema uses JSON Schema 2020-12 keywords; echoes it.",
        JSON_SCHEMA_2020_12,
    ),
    _SchemaEcho,
)
