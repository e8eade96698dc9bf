//go:build !linux && !darwin

package proc

import (
	"errors"
	"os"
)

func exitNotifier(int) (*os.File, func(int) bool, error) {
	return nil, nil, errors.ErrUnsupported
}
