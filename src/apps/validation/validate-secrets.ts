/**
 * The rules of spec.secrets and of the web credentials that name them: each
 * declared secret exists among the app's own (its namespace's Secrets, its
 * section of the secrets file), a credential names a declared secret and a key
 * it holds, carries it in exactly one of a header and a query parameter, and
 * aims at an origin the capability's allowHosts let a fetch reach; a
 * secrets.read grant names a declared secret and components of the app.
 */
import type { AppSpec } from '../schema/app-definition-schema.js';
import { hostMatches, bareHost } from '../../shared/host-pattern.js';
import type { AppSecretCheck } from './validate-mcp-servers.js';
import { endpointUrlProblem } from '../../llm/guarded-llm-dispatcher.js';

export function secretProblems(spec: AppSpec, hasSecret?: AppSecretCheck, llmAllowPrivate?: readonly string[]): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const declared = new Set<string>();
  spec.secrets?.forEach((secret, i) => {
    if (declared.has(secret.name)) problems.push([`/spec/secrets/${i}/name`, `duplicate secret "${secret.name}"`]);
    declared.add(secret.name);
    if (hasSecret !== undefined && !hasSecret(secret.name)) {
      problems.push([`/spec/secrets/${i}/name`, `the app has no secret "${secret.name}": it names one of the app's own secrets (a Secret of its namespace in a cluster, its section of the core's secrets file otherwise)`]);
    }
  });
  const web = spec.capabilities?.web;
  web?.inject?.forEach((rule, i) => {
    const at = `/spec/capabilities/web/inject/${i}`;
    if ((rule.header === undefined) === (rule.query === undefined)) problems.push([at, 'name exactly one of header and query']);
    if (rule.scheme !== undefined && rule.header === undefined) problems.push([`${at}/scheme`, 'a scheme applies to a header only']);
    if (rule.scheme !== undefined && rule.prefix !== undefined) problems.push([`${at}/prefix`, 'name a scheme or a prefix, not both']);
    const host = bareHost(new URL(rule.url).hostname);
    if (!web.allowHosts.some((pattern) => hostMatches(host, pattern))) problems.push([`${at}/url`, `host ${host} is not in capabilities.web.allowHosts`]);
    const ref = rule.secretRef;
    if (!declared.has(ref.name)) problems.push([`${at}/secretRef/name`, `secret "${ref.name}" is not declared in spec.secrets`]);
    else if (hasSecret !== undefined && hasSecret(ref.name) && !hasSecret(ref.name, ref.key)) problems.push([`${at}/secretRef/key`, `the app's secret "${ref.name}" has no key "${ref.key}"`]);
  });
  const endpoint = spec.llm?.endpoint;
  if (endpoint !== undefined) {
    const urlProblem = endpointUrlProblem(endpoint.url, llmAllowPrivate);
    if (urlProblem !== undefined) problems.push(['/spec/llm/endpoint/url', urlProblem]);
    const ref = endpoint.secret;
    if (!declared.has(ref.name)) problems.push(['/spec/llm/endpoint/secret/name', `secret "${ref.name}" is not declared in spec.secrets`]);
    else if (hasSecret !== undefined && hasSecret(ref.name) && !hasSecret(ref.name, ref.key)) problems.push(['/spec/llm/endpoint/secret/key', `the app's secret "${ref.name}" has no key "${ref.key}"`]);
  }
  const components = new Set(spec.components?.map((component) => component.id) ?? []);
  spec.capabilities?.secrets?.read.forEach((rule, i) => {
    const at = `/spec/capabilities/secrets/read/${i}`;
    if (!declared.has(rule.secret)) problems.push([`${at}/secret`, `secret "${rule.secret}" is not declared in spec.secrets`]);
    rule.components.forEach((id, j) => {
      if (!components.has(id)) problems.push([`${at}/components/${j}`, `no component "${id}" in spec.components`]);
    });
  });
  return problems;
}
