// Package shell reads a shell command line, with the bash parser of
// mvdan.cc/sh/v3, into what it would run: every simple command (of lists,
// pipelines, substitutions, functions, nested sh -c and eval scripts,
// xargs and find -exec, with wrappers such as sudo or env looked through),
// each with its words (parts unknown before the run marked Unknown), the
// directories it may run in, the environment the line gives it, the disk
// device it redirects onto and the programs it gives an interpreter. It
// also reads paths as the kernel walks them (/proc/self/root, //dev/sda)
// and long options as getopt_long does.
//
// It never runs anything, and it holds no policy: a caller's questions
// (which programs it looks at, which interpreter programs run what they
// read) are asked through Env.
package shell
