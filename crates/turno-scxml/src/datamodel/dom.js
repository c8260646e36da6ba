// XML data as a small read-only DOM (B.2: XML content becomes a DOM
// document): elements with tagName, attributes, childNodes, textContent,
// getAttribute and getElementsByTagName; text nodes with nodeValue.
(function () {
  function text(s) {
    return { nodeType: 3, nodeName: "#text", nodeValue: s, textContent: s };
  }
  function descendants(node, name, out) {
    for (var i = 0; i < node.childNodes.length; i++) {
      var c = node.childNodes[i];
      if (c.nodeType === 1) {
        if (name === "*" || c.tagName === name) out.push(c);
        descendants(c, name, out);
      }
    }
    return out;
  }
  function element(t) {
    var e = { nodeType: 1, nodeName: t.tag, tagName: t.tag, attributes: t.attrs, childNodes: [] };
    for (var i = 0; i < t.children.length; i++) {
      var c = t.children[i];
      e.childNodes.push(typeof c === "string" ? text(c) : element(c));
    }
    e.getAttribute = function (n) {
      return Object.prototype.hasOwnProperty.call(t.attrs, n) ? t.attrs[n] : null;
    };
    e.getElementsByTagName = function (n) { return descendants(e, n, []); };
    Object.defineProperty(e, "textContent", {
      get: function () { return this.childNodes.map(function (c) { return c.textContent; }).join(""); },
    });
    return e;
  }
  return function (tree) {
    var root = element(tree);
    return {
      nodeType: 9,
      nodeName: "#document",
      documentElement: root,
      toString: function () { return tree.source; },
      childNodes: [root],
      getElementsByTagName: function (n) {
        return (n === "*" || root.tagName === n ? [root] : []).concat(root.getElementsByTagName(n));
      },
    };
  };
})()
