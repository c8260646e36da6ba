// An undefined name is reported with the line and column where it is
// used (at `new` when it is constructed), as Node does, even though the
// engine's own position for it is stale.
console.log('start');
function watch(target) {
  const options = { childList: true };
  return new MutationObserver(() => {}).observe(target, options);
}
setTimeout(() => {
  console.log('timer');
  watch({});
}, 1);
