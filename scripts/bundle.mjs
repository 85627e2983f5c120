// Bundles the built CLI (dist/cli/run.js) into dist/bundle/: one module graph of a few files instead of ~300, which
// takes ~0.14 s off every `quarry` command's start (docs/benchmarks.md, "A search as a whole process"). Commands
// that load more (ask, serve, mcp) still load it lazily, from split chunks. Packages are bundled only when they are
// plain JavaScript on every command's path; native modules, WebAssembly, and packages that find files beside
// themselves stay in node_modules. Worker threads run the unbundled dist/ modules (src/workers.ts).
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const BUNDLED = [
  'zod',
  'smol-toml',
  'commander',
  '@secretlint/core',
  '@secretlint/profiler',
  '@secretlint/secretlint-rule-preset-recommend',
  'structured-source',
  'boundary',
  'ignore',
  'string-width',
  'strip-ansi',
  'ansi-regex',
  'emoji-regex',
  'get-east-asian-width',
  'picocolors',
  'p-retry',
  'is-network-error',
  'debug',
  'ms',
];

const packageOf = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2) : spec.split('/').slice(0, 1)).join('/');

// chunk names carry a content hash: without this, every build's chunks stay beside the last (640 files after a month)
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: { run: 'dist/cli/run.js' },
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: false,
  logLevel: 'warning',
  define: { __QUARRY_BUNDLE__: 'true' },
  // bundled CommonJS packages (debug) require Node's built-ins
  banner: { js: "import { createRequire as __quarryRequire } from 'node:module'; const require = __quarryRequire(import.meta.url);" },
  plugins: [
    {
      name: 'external-packages',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path.startsWith('node:')) return { external: true };
          return BUNDLED.includes(packageOf(args.path)) ? undefined : { external: true };
        });
      },
    },
  ],
});
