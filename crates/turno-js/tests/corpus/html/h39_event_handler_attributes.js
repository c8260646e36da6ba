// Event handler attributes exist where Chromium has them: onload on the
// window, onreadystatechange on the document only, and no
// onDOMContentLoaded (assigning one is a plain property that never fires).
console.log('onreadystatechange' in document, 'onreadystatechange' in document.body, 'onreadystatechange' in Document.prototype, 'onDOMContentLoaded' in window, 'onload' in window);
let fired = 0;
window.onDOMContentLoaded = () => { fired++; };
document.onreadystatechange = () => console.log('onreadystatechange', document.readyState);
window.onload = () => console.log('onload', document.readyState);
setTimeout(() => console.log('onDOMContentLoaded fired', fired, 'times'), 0);
