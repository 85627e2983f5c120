import { main } from './main.ts';

// a reader that stops early (`quarry search … | head`) closes the pipe: that is not an error
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const code = await main(process.argv.slice(2));
// Once the command is done, nothing may keep the process alive (a start-up error of `serve` must not leave a
// half-opened project, a watcher or an embedding worker running): exit when what was written has been flushed.
const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => (stream.writableLength ? stream.write('', () => resolve()) : resolve()));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
