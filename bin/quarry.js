#!/usr/bin/env node
// The built CLI lives in dist/; say how to build it instead of failing with a module-resolution stack trace.
try {
  await import('../dist/bundle/run.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/bundle/run.js')) {
    console.error('quarry: not built yet: run ./scripts/setup.sh (or npm run build) in the quarry folder');
    process.exit(70);
  }
  throw err;
}
