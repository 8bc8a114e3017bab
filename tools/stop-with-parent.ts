// Preloaded by `npm start` and `npm run operator` (node --import): when the process that started this
// one goes away without passing a signal on (npm SIGKILLed, a wrapping shell killed), this process is
// re-parented; it then sends itself SIGTERM, so it stops and cleans up as on Ctrl+C.
const parent = process.ppid;
const watch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(watch);
  process.stderr.write(`parent process ${parent} is gone: stopping as on SIGTERM\n`);
  process.kill(process.pid, 'SIGTERM');
}, 1000);
// The check alone must not keep the process alive.
watch.unref();
