package triggers

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// The checks below find, at load time, the parts of an expression that
// fail whatever the variables hold: they would pause every run with
// expression-error. Only what reads no variable is evaluated, and only
// what is cheap to evaluate: literals, operators, duration(), date() and
// the built-ins that build nothing large.

// expensiveBuiltin tells the built-ins whose cost is not bounded by the
// expression's length: repeat("x", 1000000) nested twice is a terabyte.
func expensiveBuiltin(name string) bool { return name == "repeat" }

// divisionByZero refuses x % 0 and x / 0 with a constant 0: the first fails
// at every evaluation, the second gives an infinite number.
func divisionByZero(n *ast.BinaryNode) *refusal {
	if n.Operator != "%" && n.Operator != "/" {
		return nil
	}
	zero := false
	switch r := n.Right.(type) {
	case *ast.IntegerNode:
		zero = r.Value == 0
	case *ast.FloatNode:
		zero = r.Value == 0
	}
	if !zero {
		return nil
	}
	message := fmt.Sprintf("%s divides by zero: it fails each time it is evaluated", n.String())
	if n.Operator == "/" {
		message = fmt.Sprintf("%s divides by zero: it gives an infinite number", n.String())
	}
	return &refusal{at: n, message: message, hint: "divide by a number other than 0"}
}

// constantFailure evaluates each largest part of the tree that reads no
// variable (and is more than a literal) and returns the first that fails.
func constantFailure(root ast.Node) *refusal {
	known := constants{}
	var visit func(node ast.Node) *refusal
	visit = func(node ast.Node) *refusal {
		if node == nil || isLiteral(node) {
			return nil
		}
		if known.constant(node) {
			if _, _, err := evalConstant(node); err != nil {
				return &refusal{at: node, message: fmt.Sprintf("%s always fails: %s", node.String(), runtimeMessage(err)),
					hint: "this part reads no variable, so it fails each time it is evaluated; fix it"}
			}
			return nil
		}
		for _, child := range children(node) {
			if refused := visit(child); refused != nil {
				return refused
			}
		}
		return nil
	}
	return visit(root)
}

// negativeConstant refuses a duration expression that reads no variable
// and gives a negative duration, or one too long for a duration.
func negativeConstant(root ast.Node) *refusal {
	if !(constants{}).constant(root) {
		return nil
	}
	out, ok, err := evalConstant(root)
	if !ok || err != nil {
		return nil // constantFailure reports an error
	}
	d, err := asDuration(out)
	switch {
	case err != nil:
		return &refusal{at: root, message: err.Error(), hint: hintFor(Duration)}
	case d < 0:
		return &refusal{at: root, message: fmt.Sprintf("the expression always gives %s, a negative duration", d),
			hint: "a back-off is a length of time to wait: make it 0 or more"}
	}
	return nil
}

// evalConstant evaluates a part of an expression that reads no variable,
// from its text. A part whose text does not compile on its own (a
// constant the optimizer made, say) is left alone: ok is false.
func evalConstant(node ast.Node) (out any, ok bool, err error) {
	program, err := expr.Compile(node.String(), compileOptions.Get()...)
	if err != nil {
		return nil, false, nil
	}
	out, err = expr.Run(program, &Env{})
	return out, true, err
}

// runtimeMessage is expr's message of a run-time error without its
// position and snippet.
func runtimeMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

// asDuration reads what a duration expression gave: expr types
// duration * float as a duration but computes a float of nanoseconds, so
// any number is taken as nanoseconds.
func asDuration(out any) (time.Duration, error) {
	switch d := out.(type) {
	case time.Duration:
		return d, nil
	case float64:
		if math.IsNaN(d) || d >= math.MaxInt64 || d <= math.MinInt64 {
			return 0, fmt.Errorf("the expression gives %v nanoseconds, too long for a duration (at most %dd, about 292 years)", d, longestDays)
		}
		return time.Duration(d), nil
	case int:
		return time.Duration(d), nil
	case int64:
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("the expression gave %T, not a duration", out)
}

func isLiteral(node ast.Node) bool {
	switch node.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode:
		return true
	}
	return false
}

// constants remembers which nodes read no variable and are cheap to
// evaluate, so that a walk asks once per node.
type constants map[ast.Node]bool

func (known constants) constant(node ast.Node) bool {
	if node == nil {
		return true
	}
	if c, ok := known[node]; ok {
		return c
	}
	c := true
	switch n := node.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.ConstantNode:
	case *ast.BinaryNode:
		c = n.Operator != ".."
	case *ast.CallNode:
		callee, ok := n.Callee.(*ast.IdentifierNode)
		c = ok && (callee.Value == "duration" || callee.Value == "date")
	case *ast.BuiltinNode:
		c = !expensiveBuiltin(n.Name)
	case *ast.UnaryNode, *ast.ConditionalNode, *ast.MemberNode, *ast.SliceNode,
		*ast.ArrayNode, *ast.MapNode, *ast.PairNode:
	default:
		c = false
	}
	for _, child := range children(node) {
		c = c && known.constant(child)
	}
	known[node] = c
	return c
}

// children lists the operands of the nodes constant knows; a call's callee
// is a name, not an operand.
func children(node ast.Node) []ast.Node {
	switch n := node.(type) {
	case *ast.UnaryNode:
		return []ast.Node{n.Node}
	case *ast.BinaryNode:
		return []ast.Node{n.Left, n.Right}
	case *ast.ConditionalNode:
		return []ast.Node{n.Cond, n.Exp1, n.Exp2}
	case *ast.CallNode:
		return n.Arguments
	case *ast.BuiltinNode:
		return n.Arguments
	case *ast.MemberNode:
		return []ast.Node{n.Node, n.Property}
	case *ast.SliceNode:
		return []ast.Node{n.Node, n.From, n.To}
	case *ast.ArrayNode:
		return n.Nodes
	case *ast.MapNode:
		return n.Pairs
	case *ast.PairNode:
		return []ast.Node{n.Key, n.Value}
	}
	return nil
}

// maxNesting bounds how deeply an expression nests. expr's parser
// recurses at each bracket, prefix operator, ternary and right-associative
// operator, a few kilobytes of stack each, before its own limit of 10,000
// parts counts anything: 100,000 parentheses held a quarter of a gigabyte.
const maxNesting = 100

// tooDeep returns the rune offset at which source nests past maxNesting,
// or -1. It counts conservatively: open brackets, the current run of
// prefix operators (! not - +), and every ?, ** and ^, if and let,
// outside text literals.
func tooDeep(source string) int {
	runes := []rune(source)
	depth, prefixes, chained := 0, 0, 0
	var quote, previous rune
	for i := 0; i < len(runes); i++ {
		r, at := runes[i], i
		next := rune(0)
		if i+1 < len(runes) {
			next = runes[i+1]
		}
		if quote != 0 {
			switch {
			case r == '\\' && quote != '`':
				i++
			case r == quote:
				quote, previous = 0, r
			}
			continue
		}
		switch {
		case r == '"' || r == '\'' || r == '`':
			quote, prefixes = r, 0
		case r == '(' || r == '[' || r == '{':
			depth++
		case r == ')' || r == ']' || r == '}':
			depth, prefixes = max(depth-1, 0), 0
		case r == '!' && next != '=':
			prefixes++
		case (r == '-' || r == '+') && (previous == 0 || strings.ContainsRune("([{,?:!=<>+-*/%^&|", previous)):
			prefixes++
		case r == '?' && next != '.' && next != '?':
			chained++
		case r == '^':
			chained++
		case r == '*' && next == '*':
			chained++
			i++
		case unicode.IsLetter(r) || r == '_' || unicode.IsDigit(r):
			start := i
			for i+1 < len(runes) && (unicode.IsLetter(runes[i+1]) || runes[i+1] == '_' || unicode.IsDigit(runes[i+1])) {
				i++
			}
			switch string(runes[start : i+1]) {
			case "not":
				prefixes++
			case "if", "let":
				chained++
			case "and", "or", "in", "matches", "contains", "startsWith", "endsWith":
			default:
				prefixes = 0 // an operand ends a run of prefix operators
			}
		}
		if !unicode.IsSpace(r) {
			previous = r
		}
		if depth+prefixes+chained > maxNesting {
			return at
		}
	}
	return -1
}
