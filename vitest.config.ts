import { defineConfig } from 'vitest/config';

// Two projects: unit tests sit next to the code and use no outside service;
// integration tests in test/ talk to real processes, Git, Docker, Redis and the
// Kubernetes API server, and fail (never skip) when one is missing.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'operator/**/*.test.ts'],
          testTimeout: 10_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Integration suites start real services and processes; running them one
          // file at a time keeps a 2-core machine from timing them out.
          fileParallelism: false,
        },
      },
    ],
  },
});
