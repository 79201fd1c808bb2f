/**
 * A listen that failed, told as the setting to change: a port in use names
 * `--port` (or UHLP_PORT) and how to pick another, an address that is not this
 * machine's names `--host` (or UHLP_HOST). Other errors pass unchanged.
 */
import { UhlpError } from '../shared/errors.js';

export interface ListenSetting {
  /** The value asked for. */
  readonly value: string | number;
  /** Where it came from: a flag, a variable, or `default`. */
  readonly name: string;
  /** The flags and variables that set it, for the hint: `--port or UHLP_PORT`. */
  readonly setBy: string;
}

export interface ListenSettings {
  /** What listens: `the core`, `the console's views origin`. */
  readonly what: string;
  readonly host: ListenSetting;
  readonly port: ListenSetting;
}

function told(setting: ListenSetting): string {
  return setting.name === 'default' ? `${setting.value} (the default)` : `${setting.value} (${setting.name})`;
}

function configError(message: string, setting: ListenSetting, cause: unknown): UhlpError {
  return new UhlpError('UHLP_CONFIG_INVALID', message, { name: setting.name, value: String(setting.value) }, { cause });
}

export function listenError(error: unknown, settings: ListenSettings): unknown {
  const { what, host, port } = settings;
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case 'EADDRINUSE':
      return configError(`${what} cannot listen on port ${told(port)} of ${host.value}: it is in use (another uhlp?). Choose another with ${port.setBy} (0 picks a free one), or stop what holds it`, port, error);
    case 'EACCES':
      return configError(`${what} may not listen on port ${told(port)}: ports below 1024 need privileges. Choose another with ${port.setBy}`, port, error);
    case 'EADDRNOTAVAIL':
      return configError(`${what} cannot listen on ${told(host)}: it is not an address of this machine. Give one of its addresses (127.0.0.1; 0.0.0.0 for all) with ${host.setBy}`, host, error);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return configError(`${what} cannot listen on ${told(host)}: the name does not resolve. Give an address of this machine (127.0.0.1; 0.0.0.0 for all) with ${host.setBy}`, host, error);
    default:
      return error;
  }
}
