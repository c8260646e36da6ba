// A string handler is script text, compiled and run when the timer fires.
var counter = 0;
setTimeout("counter += 1; console.log('string handler, counter', counter);", 10);
setTimeout(() => console.log('function handler, counter', counter), 20);
