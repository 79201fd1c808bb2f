// Tracing through `uhlp dev --driver process` into the test Jaeger: see the suite.
import { describeTracing } from '../helpers/tracing-suite.js';

describeTracing({ driver: 'process' });
