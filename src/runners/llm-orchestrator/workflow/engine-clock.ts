/**
 * The clock the workflow engine reads: monotonic time for a step's duration and
 * the run's deadline, wall time for the trace. Tests give their own.
 */
export interface EngineClock {
  /** Monotonic milliseconds. */
  now(): number;
  /** When a trace step happened. */
  date(): Date;
}

export const SYSTEM_CLOCK: EngineClock = {
  now: () => performance.now(),
  date: () => new Date(),
};
