// MutationObserver: the records of a script's mutations come in one batch,
// from a microtask queued at the first mutation (so before a promise
// reaction queued after it); subtree observes descendants; takeRecords
// empties the batch; disconnect stops it.
const root = document.createElement('div');
document.body.appendChild(root);
const list = document.createElement('ul');
root.appendChild(list);
const describe = (r) => r.type + ' +' + r.addedNodes.length + ' -' + r.removedNodes.length + ' prev ' + (r.previousSibling ? r.previousSibling.tagName : 'null');
const mo = new MutationObserver((records, observer) => {
  console.log('observer', records.length, records.map(describe).join(', '), observer === mo, records[0] instanceof MutationRecord);
});
mo.observe(list, { childList: true });
const a = document.createElement('li');
list.appendChild(a);
list.appendChild(document.createElement('li'));
Promise.resolve().then(() => console.log('promise queued after the mutations'));
console.log('sync after mutations');
list.removeChild(a);
try { mo.observe(list, {}); } catch (e) { console.log(e.name); }
setTimeout(() => {
  list.appendChild(a);
  console.log('timer');
  mo.disconnect();
  list.appendChild(document.createElement('li'));
}, 0);
setTimeout(() => {
  mo.observe(root, { childList: true, subtree: true });
  const li = document.createElement('li');
  list.appendChild(li);
  console.log('taken', mo.takeRecords().length);
  li.remove();
}, 5);
