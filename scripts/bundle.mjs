// Bundles the built CLI (dist/cli/run.js) into dist/bundle/: one module graph of a few files instead of ~300, which
// takes ~0.14 s off every `quarry` command's start (docs/benchmarks.md, "A search as a whole process"). Each
// command's module, and what only it needs, loads from split chunks when that command runs (cli/main.ts's command
// table). Packages are bundled only when they are plain JavaScript on every command's path; native modules,
// WebAssembly, and packages that find files beside themselves stay in node_modules. Worker threads run the unbundled
// dist/ modules (src/workers.ts).
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

// The settings schema (zod, half the bundle's code) is not on a command's start path: src/config/settings.ts is
// replaced by a module that holds the defaults as the schema gives them now and `require`s a CommonJS build of the
// schema (settings.cjs) the first time a settings file is read. That build shares the bundle's QuarryError (its
// `../errors.js` is the object the loader hands it), so errors from a settings file are quarry's own.
const { ConfigSchema } = await import(new URL('../dist/config/schema.js', import.meta.url).href);
const defaults = JSON.stringify(JSON.stringify(ConfigSchema.parse({})));
await build({
  entryPoints: ['dist/config/schema.js'],
  outfile: 'dist/bundle/settings.cjs',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  plugins: [
    {
      name: 'shared-errors',
      setup(b) {
        // quarry's own errors module (dist/errors.js), not a package's file of the same name (zod has one)
        b.onResolve({ filter: /^\.\.\/errors\.js$/ }, (args) =>
          /[\\/]dist[\\/]config[\\/][^\\/]+$/.test(args.importer)
            ? { path: 'errors', namespace: 'quarry-shared' }
            : undefined,
        );
        b.onLoad({ filter: /.*/, namespace: 'quarry-shared' }, () => ({
          contents: 'module.exports = globalThis.__quarrySettingsErrors;',
          loader: 'js',
        }));
      },
    },
  ],
});
const settingsLoader = `import { createRequire } from 'node:module';
import * as errors from '../errors.js';
let loaded;
export function settingsModule() {
  if (!loaded) {
    globalThis.__quarrySettingsErrors = errors;
    loaded = createRequire(import.meta.url)('./settings.cjs');
  }
  return loaded;
}
export function defaultConfig() {
  return JSON.parse(${defaults});
}
`;

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
      name: 'settings-on-demand',
      setup(b) {
        b.onLoad({ filter: /[\\/]dist[\\/]config[\\/]settings\.js$/ }, () => ({
          contents: settingsLoader,
          loader: 'js',
          resolveDir: 'dist/config',
        }));
      },
    },
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
