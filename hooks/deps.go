package main
import (
 _ "github.com/julienschmidt/httprouter"
 _ "k8s.io/apimachinery/pkg/apis/meta/v1"
 _ "k8s.io/apimachinery/pkg/api/resource"
 _ "sigs.k8s.io/yaml"
 _ "github.com/go-playground/validator/v10"
 _ "github.com/stretchr/testify/assert"
)
func main(){}
