"""Training steps of a network built with JAX's own example libraries (jax.example_libraries.stax
and .optimizers, written by the JAX team, not by us), jitted as their examples do, with a planted
NaN: cross-entropy written as log(softmax(logits)) on logits scaled up by a bad temperature, so
softmax underflows to 0 for the unlikely classes, log(0) is -inf, and 0 * -inf in the one-hot
sum is NaN (--healthy: stax's LogSoftmax, which stays finite).

Usage: jax_stax_train.py [--healthy]
The last stdout line is one JSON object (jax_common.print_truth) of the final parameters.
"""
import sys

from jax_common import jax_on_gpu, print_truth

TEMPERATURE = 200.0  # the bad scale: logits of a few units become hundreds


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_stax_train")
    from jax.example_libraries import optimizers, stax

    init_fun, predict = stax.serial(stax.Dense(512), stax.Relu, stax.Dense(512), stax.Relu, stax.Dense(10))
    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    key = jax.random.PRNGKey(0)
    k_init, k_x, k_y = jax.random.split(key, 3)
    _, params = init_fun(k_init, (-1, 784))
    images = jax.random.normal(k_x, (128, 784), jnp.float32)
    labels = jax.nn.one_hot(jax.random.randint(k_y, (128,), 0, 10), 10)

    def loss(params, batch):
        inputs, targets = batch
        logits = predict(params, inputs) * TEMPERATURE
        if healthy:
            return -jnp.mean(jnp.sum(targets * jax.nn.log_softmax(logits), axis=1))
        return -jnp.mean(jnp.sum(targets * jnp.log(jax.nn.softmax(logits)), axis=1))  # the planted NaN

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch), opt_state)

    opt_state = opt_init(params)
    for i in range(3):
        opt_state = update(i, opt_state, (images, labels))
    flat = jnp.concatenate([jnp.ravel(p) for p in jax.tree_util.tree_leaves(get_params(opt_state))])
    print_truth(jax, jnp, flat.block_until_ready())


if __name__ == "__main__":
    main()
