package server

import (
	"context"
	"sync"
	"time"
)

// workQueue holds the keys a controller has to work on, each once however
// often it is added, and retries the ones whose work is not done every
// second.
type workQueue[K comparable, V any] struct {
	mu    sync.Mutex
	items map[K]V
	wake  chan struct{}
}

func newWorkQueue[K comparable, V any]() *workQueue[K, V] {
	return &workQueue[K, V]{items: map[K]V{}, wake: make(chan struct{}, 1)}
}

// add queues key (with its value) and wakes the worker.
func (q *workQueue[K, V]) add(key K, value V) {
	q.mu.Lock()
	q.items[key] = value
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run calls work for every queued key until ctx ends; a key whose work
// is not done is queued again.
func (q *workQueue[K, V]) run(ctx context.Context, work func(ctx context.Context, key K, value V) (done bool)) {
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-retry.C:
		}
		q.mu.Lock()
		batch := q.items
		q.items = map[K]V{}
		q.mu.Unlock()
		for key, value := range batch {
			if !work(ctx, key, value) && ctx.Err() == nil {
				q.mu.Lock()
				if _, again := q.items[key]; !again {
					q.items[key] = value
				}
				q.mu.Unlock()
			}
		}
	}
}
