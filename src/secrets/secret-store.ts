/**
 * The one place an app's secrets come from: each app reads only its own (its
 * section of the core's secrets file, or in a cluster the Secrets of its own
 * namespace), the community MCP servers the operator's. A value is handed out
 * with its version, read once per use: a request that started with a value
 * finishes with it, whatever rotation happens meanwhile.
 */

/** One key of one secret, as it was when it was read: the value and its version (never the value in evidence). */
export interface SecretValue {
  readonly value: string;
  /** Changes whenever the value does: a Secret's resourceVersion, or the file's generation of that secret. */
  readonly version: string;
}

/** What evidence records of a secret used: its name, key and version, never its value. */
export interface SecretUse {
  readonly name: string;
  readonly key: string;
  readonly version: string;
}

/** A named value the scrubber looks for in outgoing text. */
export interface ScrubbedValue {
  /** The secret's name, which replaces the value (`[secret:<name>]`). */
  readonly name: string;
  readonly value: string;
}

export interface SecretStore {
  /** One of an app's own secrets now; undefined when the app has no such secret or key. */
  ofApp(appId: string, name: string, key: string): SecretValue | undefined;
  /** Whether the app's own secrets hold `name` (and, with `key`, that key of it): checked when the app loads. */
  appHas(appId: string, name: string, key?: string): boolean;
  /** One of the community servers' secrets (the operator's). */
  ofCommunity(name: string, key: string): SecretValue | undefined;
}

/** No secrets at all (a core without a secrets file). */
export const NO_SECRETS: SecretStore = { ofApp: () => undefined, appHas: () => false, ofCommunity: () => undefined };
