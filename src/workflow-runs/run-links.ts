/** Where clients find a workflow run: the header on every answer of a run, and the routes under which it is read and resumed (runs-routes.ts). */
export const RUN_ID_HEADER = 'x-uhlp-run-id';
export const RUNS_PATH = '/_uhlp/runs';
