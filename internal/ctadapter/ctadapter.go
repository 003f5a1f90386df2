// Package ctadapter plugs the conntrack engine into the flowtable pipeline.
package ctadapter

import "github.com/govs-project/govs/flowtable"

// New returns the connection tracker the pipeline uses.
func New() flowtable.Conntrack { return nil }
