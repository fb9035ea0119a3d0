package sandbox

// ScopesABI is the first Landlock ABI with scopes (signals, abstract Unix
// sockets), which every ruleset sets where the kernel has them.
const ScopesABI = 6
