package sessionstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func testRecords(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	ctx := t.Context()
	key := "task:" + NewID()
	if _, _, err := st.GetRecord(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRecord of nothing: %v", err)
	}
	if err := st.SetRecord(ctx, key, 1, []byte("x")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetRecord of nothing: %v", err)
	}
	data := []byte(`{"status":"working"}`)
	if err := st.CreateRecord(ctx, key, data, time.Minute); err != nil {
		t.Fatal(err)
	}
	data[2] = 'X' // the store kept its own copy
	if err := st.CreateRecord(ctx, key, []byte("again"), time.Minute); !errors.Is(err, ErrExists) {
		t.Fatalf("CreateRecord twice: %v", err)
	}
	got, ver, err := st.GetRecord(ctx, key)
	if err != nil || string(got) != `{"status":"working"}` || ver != 1 {
		t.Fatalf("GetRecord = %q, %d, %v", got, ver, err)
	}
	got[0] = '!' // a copy
	if err := st.SetRecord(ctx, key, 1, []byte(`{"status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRecord(ctx, key, 1, []byte(`{"status":"cancelled"}`)); !errors.Is(err, ErrConflict) {
		t.Fatalf("SetRecord with a stale version: %v", err)
	}
	got, ver, err = st.GetRecord(ctx, key)
	if err != nil || string(got) != `{"status":"completed"}` || ver != 2 {
		t.Fatalf("after SetRecord: %q, %d, %v", got, ver, err)
	}
	if err := st.CreateRecord(ctx, "k", nil, 0); err == nil {
		t.Fatal("CreateRecord with a zero ttl succeeded")
	}
}

func testRecordExpiry(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) { checkRecordExpiry(t, newStore, clock) })
}

func checkRecordExpiry(t *testing.T, newStore storeFactory, clock suiteClock) {
	st := newStore(t, Options{})
	ctx := t.Context()
	key := "task:" + NewID()
	if err := st.CreateRecord(ctx, key, []byte("d"), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A write does not extend the expiry set at creation.
	pass(100 * time.Millisecond) // a write made half a ttl later
	if err := st.SetRecord(ctx, key, 1, []byte("e")); err != nil {
		t.Fatal(err)
	}
	if clock == fakeClock {
		// Exactly one ttl after the creation, the record is gone.
		pass(100 * time.Millisecond)
		if _, _, err := st.GetRecord(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetRecord one ttl after the creation: %v, want ErrNotFound", err)
		}
	}
	eventually(t, "the record to expire", func() error {
		if _, _, err := st.GetRecord(ctx, key); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("GetRecord: %v", err)
		}
		return nil
	})
	if err := st.CreateRecord(ctx, key, []byte("new"), time.Minute); err != nil {
		t.Fatalf("CreateRecord after expiry: %v", err)
	}
}

// Concurrent read-modify-write loops lose no update: every SetRecord that
// succeeds saw the latest version.
func testRecordCAS(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	ctx := t.Context()
	key := "counter:" + NewID()
	if err := st.CreateRecord(ctx, key, []byte("0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 20
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					d, ver, err := st.GetRecord(ctx, key)
					if err != nil {
						t.Error(err)
						return
					}
					var n int
					fmt.Sscan(string(d), &n)
					err = st.SetRecord(ctx, key, ver, []byte(fmt.Sprint(n+1)))
					if err == nil {
						break
					}
					if !errors.Is(err, ErrConflict) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	d, ver, err := st.GetRecord(ctx, key)
	if err != nil || string(d) != fmt.Sprint(workers*each) || ver != workers*each+1 {
		t.Fatalf("after %d increments: %q version %d, %v", workers*each, d, ver, err)
	}
}
