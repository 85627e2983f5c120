// Builds quarry_bm25() (native/quarry_bm25.c), an FTS5 rank function, into dist/native/<platform>-<arch>/ with the
// system's C compiler and the SQLite headers better-sqlite3 ships. Run by `npm run build` and after an install.
// Optional: without a compiler (or where it does not build), quarry ranks with FTS5's own bm25(), which gives the
// same scores and only costs more on a large index; this says so and exits 0.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const quiet = process.argv.includes('--quiet');
const source = join(root, 'native', 'quarry_bm25.c');
const ext = process.platform === 'darwin' ? 'dylib' : process.platform === 'win32' ? 'dll' : 'so';
const out = join(root, 'dist', 'native', `${process.platform}-${process.arch}`);
const target = join(out, `quarry_bm25.${ext}`);

try {
  const headers = join(dirname(createRequire(join(root, 'package.json')).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  if (!existsSync(join(headers, 'sqlite3ext.h'))) throw new Error(`no sqlite3ext.h in ${headers}`);
  mkdirSync(out, { recursive: true });
  // a build leaves no older function behind if this one fails; an install keeps the one the package shipped
  if (!quiet) rmSync(target, { force: true });
  const shared = process.platform === 'darwin' ? ['-dynamiclib'] : ['-shared', '-fPIC'];
  execFileSync(process.env.CC || 'cc', ['-O2', ...shared, '-I', headers, '-o', target, source, '-lm'], {
    stdio: quiet ? 'ignore' : ['ignore', 'inherit', 'inherit'],
  });
} catch (err) {
  if (!quiet)
    console.warn(
      `quarry: quarry_bm25 not built (${String(err.message ?? err).split('\n')[0]}); searches rank with FTS5's bm25(), slower on large indexes`,
    );
}
