#!/usr/bin/env node
import module from 'node:module';

// Node 22.1 and later keep the compiled code of the modules loaded from here on in a cache on disk, so a one-shot
// command does not compile quarry's bundle again each time (NODE_DISABLE_COMPILE_CACHE=1 turns it off); Node 20
// has no such cache and compiles as before.
module.enableCompileCache?.();

// The built CLI lives in dist/; say how to build it instead of failing with a module-resolution stack trace.
try {
  await import('../dist/bundle/run.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/bundle/run.js')) {
    console.error('quarry: not built yet: run ./scripts/setup.sh (or npm run build) in the quarry folder');
    process.exit(70);
  }
  // a package the CLI loads at its start is gone (an emptied node_modules, an install that did not finish)
  const missing = err?.code === 'ERR_MODULE_NOT_FOUND' && /Cannot find package '([^']+)'/.exec(String(err.message));
  if (missing) {
    console.error(
      `quarry: its dependency ${missing[1]} is not installed: run ./scripts/setup.sh (or npm install) in the quarry folder`,
    );
    process.exit(70);
  }
  throw err;
}
