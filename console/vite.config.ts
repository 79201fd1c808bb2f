/**
 * The console's front-end build: two pages, the console (index.html) and the
 * views' sandbox proxy (sandbox.html), into dist/console-assets/, which the
 * core serves (src/console/console-assets.ts). Relative asset URLs, because
 * the sandbox page is served from another origin and path than the console.
 * No inline script or style is emitted (the pages' Content-Security-Policy
 * allows neither), and nothing is fetched at run time from anywhere else.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: './',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../dist/console-assets'),
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill is an inline script; every browser the console supports has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    rollupOptions: {
      input: { main: here('index.html'), sandbox: here('sandbox.html') },
    },
  },
});
