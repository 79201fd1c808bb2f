/**
 * The core's retention schedule: every interval, the ledger thread prunes with
 * the current policy (the planes' limits from the configuration, the apps'
 * from their definitions, read afresh each time so a reload applies), and what
 * it removed is logged. A run still going when the next is due is not doubled.
 */
import type { Logger } from '../logger.js';
import type { PruneReport } from './ledger-prune.js';
import { formatSize, type RetentionPolicy } from './ledger-retention.js';
import type { TurnLedgerThread } from './turn-ledger-thread.js';

export interface RetentionScheduleOptions {
  readonly ledger: TurnLedgerThread;
  /** The policy now. */
  readonly policy: () => RetentionPolicy;
  /** A stored session is over once idle this long, ms. */
  readonly sessionTtlMs: number;
  readonly intervalMs: number;
  readonly logger: Logger;
}

export interface RetentionSchedule {
  /** Runs a prune now (or joins the one running). */
  runNow(): Promise<PruneReport | undefined>;
  stop(): Promise<void>;
}

export function scheduleRetention(options: RetentionScheduleOptions): RetentionSchedule {
  let running: Promise<PruneReport | undefined> | undefined;
  let stopped = false;
  const run = (): Promise<PruneReport | undefined> => {
    if (stopped) return Promise.resolve(undefined);
    running ??= options.ledger
      .prune(options.policy(), options.sessionTtlMs)
      .then(
        (report) => {
          if (report.removedSegments > 0 || report.errors.length > 0) {
            options.logger.info(
              { segments: report.removedSegments, sessions: report.removedSessions, freed: formatSize(report.freedBytes), kept: report.keptBytes, errors: report.errors.slice(0, 10) },
              'ledger retention removed old segments',
            );
          }
          return report;
        },
        (error: Error) => {
          options.logger.warn({ err: error.message }, 'ledger retention did not run');
          return undefined;
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void run(), options.intervalMs);
  // The core's servers keep the process alive; this timer alone must not.
  timer.unref();
  return {
    runNow: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
