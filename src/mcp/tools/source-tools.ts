/**
 * The tools of the delivery sources: `core.queue.publish` (capability
 * `queue.publish`), `core.callback.create` (capability `callback.create`, for
 * the app's own callback routes) and `core.trigger.emit` (capability `trigger.emit`). Messages they
 * publish are delivered with the one delivery contract (docs/sources.md).
 */
import { Type } from '@sinclair/typebox';
import { UhlpError } from '../../shared/errors.js';
import { checkCallbackCreate, checkQueuePublish, checkTriggerEmit, requireCapability } from '../capability-guard.js';
import { defineTool, type ToolServices } from '../tool-definition.js';

const QueueTarget = Type.String({ pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$', maxLength: 127 });
const InvocationId = Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$' });

function sourcesOf(services: ToolServices): NonNullable<ToolServices['sources']> {
  if (services.sources === undefined) throw new UhlpError('UHLP_ENDPOINT_UNAVAILABLE', 'this core runs no delivery sources');
  return services.sources;
}

export const queuePublish = defineTool({
  name: 'core.queue.publish',
  description: 'Publishes a JSON payload onto a queue (`name` of this app, or `appId/name`); invocationId, when given, is the dedup key.',
  capability: 'queue',
  inputSchema: Type.Object({ queue: QueueTarget, payload: Type.Unknown(), invocationId: Type.Optional(InvocationId) }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const slash = args.queue.indexOf('/');
    const targetApp = slash === -1 ? grant.appId : args.queue.slice(0, slash);
    const name = slash === -1 ? args.queue : args.queue.slice(slash + 1);
    checkQueuePublish(requireCapability(grant.capabilities, 'queue'), grant.appId, targetApp, name);
    const published = await sourcesOf(services).publishQueue(targetApp, name, JSON.stringify(args.payload ?? null), args.invocationId);
    return { content: { ...published, queue: `${targetApp}/${name}` } };
  },
});

export const callbackCreate = defineTool({
  name: 'core.callback.create',
  description: "Creates a single-use callback URL for one of this app's callback routes; a request to it runs the route's component with callbackDetails.",
  capability: 'callback',
  inputSchema: Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 63 }), correlation: Type.Optional(Type.String({ maxLength: 512 })) },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    checkCallbackCreate(requireCapability(grant.capabilities, 'callback'), args.name);
    const sources = sourcesOf(services);
    const created = sources.createCallback(grant.appId, args.name, args.correlation ?? '');
    return { content: { url: `${sources.publicUrl()}${created.path}`, path: created.path, expiresAt: created.expiresAt } };
  },
});

export const triggerEmit = defineTool({
  name: 'core.trigger.emit',
  description: 'Emits an internal event to every trigger route (of this or another app) that listens to it and accepts this app; delivered asynchronously.',
  capability: 'trigger',
  inputSchema: Type.Object({ event: Type.String({ pattern: '^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$' }), payload: Type.Unknown() }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    checkTriggerEmit(requireCapability(grant.capabilities, 'trigger'), args.event);
    const emitted = await sourcesOf(services).emitTrigger(grant.appId, args.event, args.payload ?? null, grant.triggerDepth ?? 0);
    return { content: emitted };
  },
});
