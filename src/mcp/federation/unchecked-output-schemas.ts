/**
 * The SDK client's JSON Schema validator for remote MCP servers: it compiles
 * nothing and finds every structured content valid. A remote server's
 * `outputSchema` is the server's own word about its answers; checking its
 * answers against it would run whatever the server wrote (a `pattern` such as
 * `^(a+)+$`, a `uniqueItems` over a megabyte of items) on the core's event
 * loop, for every app. The core neither lists a server's outputSchema nor
 * promises it: callers get the structured content as the server sent it.
 */
import type { jsonSchemaValidator, JsonSchemaValidator } from '@modelcontextprotocol/client';

export const uncheckedOutputSchemas: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input: unknown) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};
