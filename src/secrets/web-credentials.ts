/**
 * An app's web credentials (capabilities.web.inject) resolved for one fetch:
 * each value read from the app's own secrets once, when the fetch starts, so a
 * fetch in flight keeps the value it started with while the next one takes a
 * rotated value.
 */
import type { WebInjection } from '../apps/schema/app-definition-schema.js';
import { credentialApplies, type EgressCredential } from '../net/egress-credentials.js';
import { UhlpError } from '../shared/errors.js';
import type { SecretStore, SecretUse } from './secret-store.js';

export interface ResolvedCredentials {
  /** What the guarded fetch adds, index for index with `uses`. */
  readonly credentials: EgressCredential[];
  /** The secret behind each credential, for evidence. */
  readonly uses: SecretUse[];
}

/**
 * The credentials of `rules` with their values. A rule whose secret is missing
 * is left out; when it matches the URL asked for, the fetch fails
 * UHLP_SECRET_UNAVAILABLE rather than go out without its credential.
 */
export function resolveWebCredentials(appId: string, rules: readonly WebInjection[] | undefined, secrets: SecretStore, target: { url: URL; method: string }): ResolvedCredentials {
  const credentials: EgressCredential[] = [];
  const uses: SecretUse[] = [];
  for (const rule of rules ?? []) {
    const { name, key } = rule.secretRef;
    const ruleUrl = new URL(rule.url);
    const secret = secrets.ofApp(appId, name, key);
    const where = { origin: ruleUrl.origin, pathPrefix: ruleUrl.pathname, ...(rule.methods !== undefined ? { methods: rule.methods } : {}) };
    if (secret === undefined) {
      if (credentialApplies(where, target.url, target.method)) {
        throw new UhlpError('UHLP_SECRET_UNAVAILABLE', `the credential for ${ruleUrl.origin} needs secret "${name}" key "${key}", which the app does not have now`, { secret: name, key });
      }
      continue;
    }
    credentials.push({
      ...where,
      ...(rule.header !== undefined ? { header: rule.header } : { query: rule.query! }),
      value: formatted(rule, secret.value),
    });
    uses.push({ name, key, version: secret.version });
  }
  return { credentials, uses };
}

function formatted(rule: WebInjection, value: string): string {
  if (rule.scheme === 'bearer') return `Bearer ${value}`;
  if (rule.scheme === 'basic') return `Basic ${Buffer.from(value).toString('base64')}`;
  return `${rule.prefix ?? ''}${value}`;
}
