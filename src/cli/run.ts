import { main } from './main.ts';

// a reader that stops early (`quarry search … | head`) closes the pipe: that is not an error
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

process.exitCode = await main(process.argv.slice(2));
