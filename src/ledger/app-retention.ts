/**
 * The retention the core applies: the planes' limits from its configuration,
 * each app's from its definition (`spec.ledger.retention`), as the registry
 * has the apps at the time retention runs.
 */
import type { AppSnapshot } from '../apps/app-snapshot.js';
import type { Logger } from '../logger.js';
import { parseDuration, parseSize, type RetentionLimits, type RetentionPolicy } from './ledger-retention.js';

export function retentionPolicy(planes: Readonly<Record<string, RetentionLimits>>, snapshot: AppSnapshot, logger: Logger): RetentionPolicy {
  const apps: Record<string, RetentionLimits> = {};
  for (const app of snapshot.apps.values()) {
    const retention = app.document.spec.ledger?.retention;
    if (retention === undefined) continue;
    try {
      apps[app.id] = {
        ...(retention.maxAge !== undefined ? { maxAgeMs: parseDuration(retention.maxAge, 'spec.ledger.retention.maxAge') } : {}),
        ...(retention.maxSize !== undefined ? { maxBytes: parseSize(retention.maxSize, 'spec.ledger.retention.maxSize') } : {}),
      };
    } catch (error) {
      // The schema admits only these forms; a value past its bounds is left out rather than stop retention.
      logger.warn({ app: app.id, err: (error as Error).message }, 'ledger retention of the app ignored');
    }
  }
  return { planes, apps };
}
