/* control.h — the agent's own thread: control socket (hotspur ctl),
 * periodic profiles and wall-clock ticks. */
#ifndef HS_AGENT_CONTROL_H
#define HS_AGENT_CONTROL_H

/* What the agent thread asks of the agent's life cycle (agent.c fills it):
 * the control socket's requests, window ends, the write of a process that
 * ends by a fatal signal or _exit. */
typedef struct {
    /* write every enabled profile (hs_agent_dump) */
    int (*dump)(const char *tmpl, void (*on_file)(const char *path, void *arg), void *arg);
    void (*pause)(void);  /* every sampler; what was collected is kept */
    void (*resume)(void);
    void (*mark)(void);   /* a window opens: forget what came before */
    void (*window_end)(void);  /* a window closed: upload or write it */
    void (*populate_tables)(void); /* pre-fault the signal handlers' tables */
    void (*final_write)(void);     /* the write at the process's end */
} hs_control_ops;

/* Start the thread if anything needs it (control socket, periodic profiles,
 * wall-clock sampling); ops stays the agent's for the process's life (and
 * its fork children's). 0, or -1 with errno. */
int hs_control_start(const hs_control_ops *ops);
/* At exit: stop answering and remove the socket. */
void hs_control_stop(void);
/* Whether the agent thread runs (after hs_control_stop it ends within a
 * second: an agent started again waits for it). */
int hs_control_running(void);
/* In every fork child, first: drop the parent's socket and wake pipe (a
 * fatal signal then takes its default course unless the child profiles). */
void hs_control_forget_parent(void);
/* In a fork child that profiles: a thread and socket of its own. */
void hs_control_after_fork(void);
/* The process ends without exit() (_exit): have the agent thread write
 * every profile and wait for it. 0 done, -1 not done (no agent thread, or
 * a fatal signal is being handled): the caller may write itself. */
int hs_control_write_before_exit(void);
/* Periodic mode: whether a profile's window is open now. */
int hs_control_window_open(void);
/* Close the window: whether it was open (the caller has it then). */
int hs_control_window_close(void);

#endif
