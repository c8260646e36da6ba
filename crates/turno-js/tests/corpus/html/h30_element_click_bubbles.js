// HTMLElement.click() dispatches a synthetic click that bubbles through
// the element's ancestors to the window; the listeners' microtasks wait
// until the calling script's stack is empty.
const outer = document.createElement('div');
outer.id = 'outer';
const btn = document.createElement('button');
outer.appendChild(btn);
document.body.appendChild(outer);
const log = (where) => (e) => {
  console.log(where, e.type, e.eventPhase, e.target === btn, e.currentTarget === btn, e.isTrusted, e.detail, e.bubbles);
  Promise.resolve().then(() => console.log('microtask after', where));
};
window.addEventListener('click', log('window capture'), true);
document.addEventListener('click', log('document'));
document.body.addEventListener('click', log('body'));
outer.addEventListener('click', log('outer'));
btn.addEventListener('click', log('button'));
btn.onclick = () => console.log('onclick handler');
window.addEventListener('click', log('window'));
console.log('before click');
btn.click();
console.log('after click');
outer.addEventListener('click', (e) => e.stopPropagation());
setTimeout(() => { btn.click(); console.log('second click done'); }, 0);
