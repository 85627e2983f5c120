import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The panel's libraries by the name the page imports them under: the package, and the browser build inside it. */
const PANEL_ASSETS: Record<string, [string, string]> = {
  'marked.js': ['marked', 'lib/marked.esm.js'],
  'purify.js': ['dompurify', 'dist/purify.es.mjs'],
  'highlight.js': ['@highlightjs/cdn-assets', 'es/highlight.min.js'],
  'highlight.css': ['@highlightjs/cdn-assets', 'styles/github-dark.min.css'],
  'eventsource-parser.js': ['eventsource-parser', 'dist/index.js'],
};

/** A package's folder (its exports map hides the browser builds from `require.resolve`). */
function packageDir(name: string): string {
  const require = createRequire(import.meta.url);
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    // package.json not exported: walk up from the package's entry point
  }
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === name)
        return dir;
    } catch {
      // no package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the folder of ${name}`);
    dir = parent;
  }
}
const assetCache = new Map<string, { body: string; type: string }>();

/** One of the panel's libraries by name, read once; undefined for a name the panel does not use. */
export function panelAsset(name: string): { body: string; type: string } | undefined {
  const entry = Object.hasOwn(PANEL_ASSETS, name) ? PANEL_ASSETS[name] : undefined;
  if (!entry) return undefined;
  let asset = assetCache.get(name);
  if (!asset) {
    const path = join(packageDir(entry[0]), entry[1]);
    asset = {
      body: readFileSync(path, 'utf8'),
      type: name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
    };
    assetCache.set(name, asset);
  }
  return asset;
}
