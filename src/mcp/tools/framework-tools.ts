/**
 * Tools every app has: its configuration values, and a log line in the core's log.
 */
import { Type } from '@sinclair/typebox';
import { defineTool } from '../tool-definition.js';

export const getConfigValue = defineTool({
  name: 'core.framework.getConfigValue',
  description: "Reads one value of the app's configuration (spec.configuration) at the execution's revision; null when absent.",
  inputSchema: Type.Object({ key: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
  async run(args, { grant }) {
    const found = Object.hasOwn(grant.configuration, args.key);
    return { content: { value: found ? grant.configuration[args.key] : null, found } };
  },
});

export const log = defineTool({
  name: 'core.log',
  description: "Writes one line to the core's log, tagged with the app, component and request.",
  inputSchema: Type.Object(
    {
      level: Type.Optional(Type.Union(['debug', 'info', 'warn', 'error'].map((l) => Type.Literal(l)), { default: 'info' })),
      message: Type.String({ maxLength: 8192 }),
      fields: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Extra JSON fields, kept under `fields`.' })),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    const level = (args.level ?? 'info') as 'debug' | 'info' | 'warn' | 'error';
    // The app's fields stay under one key: they must not overwrite the tags that say who logged.
    services.logger[level](
      { source: 'app', app: grant.appId, component: grant.componentId, requestId: grant.requestId, ...(args.fields ? { fields: args.fields } : {}) },
      args.message,
    );
    return { content: { logged: true } };
  },
});
