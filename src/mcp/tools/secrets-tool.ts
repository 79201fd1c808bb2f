/**
 * `core.secrets.read`: a secret's value handed to a script that must hold it
 * (a key it signs with), only where capabilities.secrets.read grants that
 * secret to the calling component. The value is read at call time (a rotated
 * secret is the next call's) and reaches the execution in this result only:
 * nothing is written to the sandbox's disk or environment, and the sandbox
 * stays warm. It is the one tool result the scrubber leaves as it is; what the
 * script then answers, logs or sends through the core is scrubbed as usual.
 */
import { Type } from '@sinclair/typebox';
import { UhlpError } from '../../shared/errors.js';
import { capabilityDenied, requireCapability } from '../capability-guard.js';
import { defineTool } from '../tool-definition.js';

export const secretsRead = defineTool({
  name: 'core.secrets.read',
  description: "Reads one key of one of the app's secrets, where capabilities.secrets.read grants it to this component.",
  capability: 'secrets',
  inputSchema: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 63, description: 'The secret (one of spec.secrets).' }),
      key: Type.String({ minLength: 1, maxLength: 253, description: 'Its key.' }),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    const granted = requireCapability(grant.capabilities, 'secrets').read.some((rule) => rule.secret === args.name && rule.components.includes(grant.componentId));
    if (!granted) {
      throw capabilityDenied('secrets', 'read', `component ${grant.componentId} is not granted secret "${args.name}"`, { secret: args.name, component: grant.componentId });
    }
    const secret = services.secrets?.ofApp(grant.appId, args.name, args.key);
    if (secret === undefined) {
      throw new UhlpError('UHLP_SECRET_UNAVAILABLE', `secret "${args.name}" key "${args.key}" is not among the app's secrets now`, { secret: args.name, key: args.key });
    }
    return { content: { value: secret.value, version: secret.version }, secrets: [{ name: args.name, key: args.key, version: secret.version }], handsInSecret: true };
  },
});
