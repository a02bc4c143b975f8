// Package integration is the heavy part of zkrecipes' test tooling, kept in
// a module of its own so that users of the library never inherit it: the
// Docker path (testcontainers-go), which starts a zookeeper:3.8 container
// when no ZooKeeper is installed locally, and the programs and tests that
// use it. Importing it (for its side effect) makes the core harness,
// internal/testkit/harness, fall back to a container.
package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

func init() { harness.ZKSource = launchContainerZK }

// stopGrace is how long Stop waits for the container's server to exit.
const stopGrace = 15 * time.Second

// zkImage is the image used when ZooKeeper is not installed locally.
const zkImage = "zookeeper:3.8"

// containerTimeout bounds each Docker operation (the first run may pull).
const containerTimeout = 3 * time.Minute

// dockerHealthy reports nil when testcontainers finds a Docker daemon that
// answers. Testcontainers panics in some setups without Docker; that counts
// as no daemon.
func dockerHealthy() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	return p.Health(ctx)
}

// launchContainerZK runs a single zookeeper:3.8 container with the settings
// of the local members (tickTime 200, all four-letter words, quick container
// node reaping), its port 2181 bound to a free port on 127.0.0.1.
func launchContainerZK(members int) (*harness.ZK, error) {
	if err := dockerHealthy(); err != nil {
		return nil, fmt.Errorf("%w: no Docker daemon: %v", harness.ErrUnavailable, err)
	}
	if members != 1 {
		return nil, fmt.Errorf("%w: a ZooKeeper container has one member, the test needs %d: install zookeeper locally",
			harness.ErrUnavailable, members)
	}
	ports, err := harness.FreePorts(1)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ctr, err := testcontainers.Run(ctx, zkImage,
		testcontainers.WithExposedPorts("2181/tcp"),
		testcontainers.WithEnv(map[string]string{
			"ZOO_TICK_TIME":              "200",
			"ZOO_4LW_COMMANDS_WHITELIST": "*",
			"ZOO_ADMINSERVER_ENABLED":    "false",
			"ZOO_CFG_EXTRA":              "minSessionTimeout=400 maxSessionTimeout=60000 forceSync=no",
			"JVMFLAGS": "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 " +
				"-Dznode.container.checkIntervalMs=1000",
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{network.MustParsePort("2181/tcp"): {{
				HostIP: netip.MustParseAddr(harness.Loopback), HostPort: strconv.Itoa(ports[0]),
			}}}
		}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("2181/tcp").WithStartupTimeout(2*time.Minute)),
	)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return nil, fmt.Errorf("run %s container: %w", zkImage, err)
	}
	ctl := &containerControl{ctr: ctr, up: true}
	addr := net.JoinHostPort(harness.Loopback, strconv.Itoa(ports[0]))
	return harness.NewZK([]string{addr}, []harness.Control{ctl}, ctl.terminate)
}

// containerControl controls a member running in a container: Stop and Start
// through testcontainers, Kill and Pause through the Docker API.
type containerControl struct {
	ctr *testcontainers.DockerContainer

	mu     sync.Mutex
	up     bool
	paused bool
}

func (c *containerControl) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	if err := c.ctr.Start(ctx); err != nil {
		return err
	}
	c.set(true, false)
	return nil
}

func (c *containerControl) Stop() error {
	if !c.Running() {
		return nil
	}
	if c.Paused() {
		_ = c.Resume()
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	grace := stopGrace
	if err := c.ctr.Stop(ctx, &grace); err != nil {
		return err
	}
	c.set(false, false)
	return nil
}

func (c *containerControl) Kill() error {
	return c.docker(func(ctx context.Context, cli *testcontainers.DockerClient) error {
		_, err := cli.ContainerKill(ctx, c.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
		if err == nil {
			c.set(false, false)
		}
		return err
	})
}

func (c *containerControl) Pause() error {
	return c.docker(func(ctx context.Context, cli *testcontainers.DockerClient) error {
		_, err := cli.ContainerPause(ctx, c.ctr.GetContainerID(), client.ContainerPauseOptions{})
		if err == nil {
			c.set(true, true)
		}
		return err
	})
}

func (c *containerControl) Resume() error {
	return c.docker(func(ctx context.Context, cli *testcontainers.DockerClient) error {
		_, err := cli.ContainerUnpause(ctx, c.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
		if err == nil {
			c.set(true, false)
		}
		return err
	})
}

// docker runs op with a Docker API client; without one the operation is
// unsupported, and the test asking for it is skipped.
func (c *containerControl) docker(op func(context.Context, *testcontainers.DockerClient) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("%w: no Docker API client for the container: %v", harness.ErrNotControllable, err)
	}
	defer cli.Close()
	return op(ctx, cli)
}

func (c *containerControl) set(up, paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.up, c.paused = up, paused
}

func (c *containerControl) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}

func (c *containerControl) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// logTail returns the end of the container's log.
func (c *containerControl) LogTail(n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := c.ctr.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(no container log: %v)", err)
	}
	defer rc.Close()
	f, err := os.CreateTemp("", "zkr-ctr-log-")
	if err != nil {
		return fmt.Sprintf("(no container log: %v)", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, _ = io.Copy(f, io.LimitReader(rc, 16<<20))
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return fmt.Sprintf("(no container log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// terminate removes the container.
func (c *containerControl) terminate() error {
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	return c.ctr.Terminate(ctx)
}
