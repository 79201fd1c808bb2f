// Tracing through `uhlp dev --driver docker` into the test Jaeger: see the suite.
import { describeTracing } from '../helpers/tracing-suite.js';
import { testImages } from './docker-env.js';

describeTracing({ driver: 'docker', before: testImages });
