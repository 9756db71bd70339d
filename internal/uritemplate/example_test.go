package uritemplate_test

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
)

func Example() {
	tmpl, err := uritemplate.Parse("test://template/{id}/data{?format}")
	if err != nil {
		panic(err)
	}
	fmt.Println(tmpl.Vars())
	fmt.Println(tmpl.Expand(map[string]string{"id": "a b", "format": "json"}))

	vars, ok := tmpl.Match("test://template/123/data")
	fmt.Println(vars, ok)
	vars, ok = tmpl.Match("test://template/a%20b/data?format=json")
	fmt.Println(vars, ok)
	_, ok = tmpl.Match("test://other/123/data")
	fmt.Println(ok)
	// Output:
	// [id format]
	// test://template/a%20b/data?format=json
	// map[id:123] true
	// map[format:json id:a b] true
	// false
}
