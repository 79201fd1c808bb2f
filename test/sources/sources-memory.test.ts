/**
 * The delivery sources suite on the embedded default: streams, retries, dead
 * letters and cron claims in the core's own process (lost on restart).
 */
import { describeSources } from '../helpers/sources-suite.js';

describeSources('embedded default (--state memory)', { args: ['--state', 'memory'], env: {} });
