package jsonrpc

import ()
