/**
 * The checks of a delivery route (cron, queue, callback, trigger) a schema
 * cannot express: a cron schedule and time zone that can be read, a backoff
 * whose ceiling is not under its start, and a lease past the longest an
 * execution can hold a message (or a live core's message would be taken over).
 */
import type { PoolSpec, RouteSpec } from '../schema/app-definition-schema.js';
import { CronSchedule, CronScheduleError } from '../../sources/cron/cron-schedule.js';
import { minimumLeaseMs } from '../../sources/source-routes.js';

/** Problems as [path under the route, reason]. */
export function sourceRouteProblems(route: RouteSpec, pool: PoolSpec | undefined): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const kind = route.cron ? 'cron' : route.queue ? 'queue' : route.callback ? 'callback' : 'trigger';
  const spec = route.cron ?? route.queue ?? route.callback ?? route.trigger;
  if (!spec) return problems;
  if (route.cron) {
    try {
      new CronSchedule(route.cron.schedule, route.cron.timezone);
    } catch (error) {
      if (!(error instanceof CronScheduleError)) throw error;
      problems.push([error.message.includes('time zone') ? 'cron/timezone' : 'cron/schedule', error.message]);
    }
  }
  if (spec.backoff.maxMs < spec.backoff.initialMs) problems.push([`${kind}/backoff/maxMs`, `${spec.backoff.maxMs} is under initialMs ${spec.backoff.initialMs}`]);
  if (spec.leaseSeconds !== undefined && pool !== undefined && spec.leaseSeconds * 1000 <= minimumLeaseMs(pool)) {
    problems.push([
      `${kind}/leaseSeconds`,
      `${spec.leaseSeconds} s does not exceed the time an execution may hold a message (pool "${pool.name}": acquireTimeoutMs + timeoutMs = ${minimumLeaseMs(pool)} ms)`,
    ]);
  }
  return problems;
}
