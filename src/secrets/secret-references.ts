/**
 * Which secrets an app's definition uses: those spec.secrets declares, and
 * those its remote MCP servers' headers name (which earlier releases let an app
 * use without declaring them). In a cluster these are the Secrets of its
 * namespace the core reads for it, and no other.
 */

interface SpecWithSecrets {
  readonly secrets?: ReadonlyArray<{ readonly name: string }>;
  readonly mcpServers?: ReadonlyArray<{ readonly http?: { readonly headers?: ReadonlyArray<{ readonly secretRef: { readonly name: string } }> } }>;
  readonly capabilities?: { readonly web?: { readonly inject?: ReadonlyArray<{ readonly secretRef: { readonly name: string } }> } };
}

/** The names of the secrets an app's definition uses, each once. */
export function secretNamesOf(spec: SpecWithSecrets): string[] {
  return [
    ...new Set([
      ...(spec.secrets ?? []).map((secret) => secret.name),
      ...(spec.mcpServers ?? []).flatMap((server) => (server.http?.headers ?? []).map((header) => header.secretRef.name)),
      ...(spec.capabilities?.web?.inject ?? []).map((rule) => rule.secretRef.name),
    ]),
  ];
}
