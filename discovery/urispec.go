package discovery

import (
	"fmt"
	"strconv"
	"strings"
)

// URISpec is curator-x-discovery's UriSpec: a URI template of literal and
// variable parts, stored with the instance as {"parts":[{"value",
// "variable"}]}. ParseURISpec reads Curator's "{scheme}://{address}:{port}"
// form; Build fills it in.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is one part of a URISpec: a literal, or the name of a variable.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// The variables Build fills from an instance (Curator's UriSpec.FIELD_*).
const (
	VarScheme           = "scheme"                // "https" when the instance has an SSL port, else "http"
	VarName             = "name"                  // Instance.Name
	VarID               = "id"                    // Instance.ID
	VarAddress          = "address"               // Instance.Address
	VarPort             = "port"                  // Instance.Port ("" when nil)
	VarSSLPort          = "ssl-port"              // Instance.SSLPort ("" when nil)
	VarRegistrationTime = "registration-time-utc" // Instance.Registered, milliseconds
	VarServiceType      = "service-type"          // Instance.Type in lower case
	VarOpenBrace        = "["                     // a literal '{'
	VarCloseBrace       = "]"                     // a literal '}'
)

// ParseURISpec parses a template as Curator's UriSpec(String) does: text
// between '{' and '}' is a variable (its name trimmed of spaces), the rest
// literal. A '{' inside a variable, a '}' without its '{' or a variable
// left open is an ErrInvalidArgument error.
func ParseURISpec(raw string) (*URISpec, error) {
	spec := &URISpec{}
	inside := false
	for rest := raw; rest != ""; {
		i := strings.IndexAny(rest, "{}")
		if i != 0 {
			tok := rest
			if i > 0 {
				tok = rest[:i]
			}
			if inside {
				// Curator trims with String.trim: every char <= ' '.
				tok = strings.TrimFunc(tok, func(r rune) bool { return r <= ' ' })
			}
			spec.Parts = append(spec.Parts, URIPart{Value: tok, Variable: inside})
			if i < 0 {
				break
			}
			rest = rest[i:]
			continue
		}
		switch rest[0] {
		case '{':
			if inside {
				return nil, fmt.Errorf("%w: uri spec %q: '{' inside a variable", ErrInvalidArgument, raw)
			}
			inside = true
		case '}':
			if !inside {
				return nil, fmt.Errorf("%w: uri spec %q: '}' without its '{'", ErrInvalidArgument, raw)
			}
			inside = false
		}
		rest = rest[1:]
	}
	if inside {
		return nil, fmt.Errorf("%w: uri spec %q: variable not closed (want '}')", ErrInvalidArgument, raw)
	}
	return spec, nil
}

// Build returns the URI the spec makes for inst, as Curator's
// UriSpec.build(instance, variables): each variable is replaced by vars'
// value if vars has it, else by the instance's (VarScheme and the others
// above), else by nothing (Curator logs it at debug level and leaves it
// out). A nil spec builds "" (ServiceInstance.buildUriSpec).
func (s *URISpec) Build(inst Instance, vars map[string]string) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
			continue
		}
		if v, ok := vars[p.Value]; ok {
			b.WriteString(v)
			continue
		}
		v, _ := instanceVar(inst, p.Value)
		b.WriteString(v)
	}
	return b.String()
}

// instanceVar is the value Curator puts in its local variables for name.
func instanceVar(inst Instance, name string) (string, bool) {
	port := func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	}
	switch name {
	case VarOpenBrace:
		return "{", true
	case VarCloseBrace:
		return "}", true
	case VarScheme:
		if inst.SSLPort != nil {
			return "https", true
		}
		return "http", true
	case VarName:
		return inst.Name, true
	case VarID:
		return inst.ID, true
	case VarAddress:
		return inst.Address, true
	case VarPort:
		return port(inst.Port), true
	case VarSSLPort:
		return port(inst.SSLPort), true
	case VarRegistrationTime:
		var ms int64
		if !inst.Registered.IsZero() {
			ms = inst.Registered.UnixMilli()
		}
		return strconv.FormatInt(ms, 10), true
	case VarServiceType:
		return strings.ToLower(string(inst.Type)), true
	}
	return "", false
}

// String is the template form ParseURISpec reads ("{scheme}://..."); a
// literal '{' or '}' comes out as the variable that makes it ("{[}").
func (s *URISpec) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if p.Variable {
			b.WriteString("{" + p.Value + "}")
			continue
		}
		b.WriteString(strings.NewReplacer("{", "{[}", "}", "{]}").Replace(p.Value))
	}
	return b.String()
}

// appendJSON appends the spec as Jackson writes Curator's UriSpec.
func (s *URISpec) appendJSON(b []byte) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"parts":[`...)
	for k, p := range s.Parts {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = appendString(b, p.Value)
		b = append(b, `,"variable":`...)
		b = strconv.AppendBool(b, p.Variable)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
