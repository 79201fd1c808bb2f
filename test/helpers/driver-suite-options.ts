/** What a shared suite run on the process and Docker drivers takes from its caller. */
export interface DriverSuiteOptions {
  readonly driver: 'process' | 'docker';
  /** Called before the cores start (the Docker engine check). */
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}
